// The POST body's decoder: the common body (an object of query,
// operationName, variables, extensions and documentId, each once, with
// plain keys) is decoded by hand, without encoding/json's reflection and
// byte-by-byte scanner (11 % of the gateway's CPU for 20 aliases, issue
// 25); every other body, and every body in doubt, goes to encoding/json
// exactly as before, with the same bytes and the same read error.
//
// This mirrors encoding/json's decoding of graphql.RawParams (with
// documentId) under Decoder.UseNumber: a member's value, null, a duplicate
// key, a case-folded key and the point where the Decoder stops reading.
// It handles only a subset it can decode exactly and hands everything
// else (escapes \u, invalid UTF-8, unknown or repeated members, wrong
// types, bad syntax) to encoding/json, so a difference can only be a
// subset decoded differently: TestDecodePOSTDifferential and
// FuzzDecodePOST compare both on every input.

package gqlhttp

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/99designs/gqlgen/graphql"

	"paygraph/internal/swar"
)

// postBody is what a POST body carries.
type postBody struct {
	graphql.RawParams
	DocumentID string `json:"documentId"` // persisted documents (graph/trusteddocs.go)
}

// decodePOSTJSON is the reference decoder: encoding/json, one value read
// from r, numbers as json.Number.
func decodePOSTJSON(r io.Reader, req *postBody) error {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	return dec.Decode(req)
}

// maxFastTries bounds the hand decoder's passes over a body that arrives
// in many reads (each pass starts again from the first byte); past it,
// encoding/json takes the body over.
const maxFastTries = 8

// decoderMinRead is encoding/json's minRead (stream.go): the least room
// its Decoder reads into.
const decoderMinRead = 512

// maxPooledBody: larger buffers are not kept for the next body.
const maxPooledBody = 64 << 10

var postBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// decodePOST decodes one JSON value from r into req, as decodePOSTJSON
// would: same result, same error or not, and no byte read past where
// encoding/json's Decoder would have stopped reading.
func decodePOST(r io.Reader, req *postBody) error {
	bp := postBufs.Get().(*[]byte)
	b := (*bp)[:0]
	defer func() {
		if cap(b) <= maxPooledBody {
			*bp = b[:0]
			postBufs.Put(bp)
		}
	}()
	// Each read asks for as many bytes as the Decoder's would (its buffer
	// grows to 2*cap+512 when less than 512 bytes are free), so that the
	// same reads of the same reader return the same bytes and errors
	// (a MaxBytesError, a timeout) as they did for the Decoder.
	room := 0
	var resume strResume
	for tries := 0; ; tries++ {
		if room-len(b) < decoderMinRead {
			room = 2*room + decoderMinRead
		}
		b = slices.Grow(b, room-len(b))
		n, err := r.Read(b[len(b):room])
		b = b[:len(b)+n]
		// As the Decoder does, the bytes read are looked at before the
		// read's error. A status of more means that what was read is a
		// valid beginning of a JSON value that has not ended: the
		// Decoder would read on too.
		st := fastMore
		if n > 0 {
			*req = postBody{}
			st = decodeFastFrom(b, req, &resume)
			if st == fastDone {
				return nil
			}
		}
		if st == fastFallback || err != nil || tries >= maxFastTries {
			*req = postBody{}
			rest := r
			if err != nil {
				rest = errReader{err}
			}
			return decodePOSTJSON(io.MultiReader(bytes.NewReader(b), rest), req)
		}
	}
}

// errReader returns err, again and again.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

type fastStatus int8

const (
	fastOK       fastStatus = iota // a part decoded; go on
	fastDone                       // the object decoded
	fastMore                       // a valid beginning: more bytes are needed
	fastFallback                   // not for the hand decoder: encoding/json decides
)

// maxFastDepth: deeper variables go to encoding/json (whose own bound is
// 10,000).
const maxFastDepth = 64

type fastDecoder struct {
	b      []byte
	i      int
	depth  int
	resume *strResume // nil: every string from its start
}

// strResume is how far a pass over the body so far got into the string
// it ended in (str), for the next pass over the same bytes and more:
// decodePOST reads as encoding/json's Decoder does (512 bytes, then
// 1,536, ...) and decodes all it has after each read, so a 1.7 KB query
// was scanned three times (3.7 KB: 8 % of aliases20's instructions). The
// bytes a pass saw do not change (a read only appends), so the next pass
// takes the string's scan up where this one stopped.
type strResume struct {
	start        int // the string's first byte (0: none)
	j            int // b[start:j] is scanned: no quote, and its escapes valid
	plain, ascii bool
}

// decodeFast decodes b, the body so far, into req.
func decodeFast(b []byte, req *postBody) fastStatus {
	return decodeFastFrom(b, req, nil)
}

// decodeFastFrom is decodeFast, the string the last pass ended in (if
// any) scanned up to where resume says.
func decodeFastFrom(b []byte, req *postBody, resume *strResume) fastStatus {
	d := fastDecoder{b: b, resume: resume}
	if st := d.expect('{'); st != fastOK {
		return st
	}
	var seen uint8
	d.ws()
	if d.i == len(b) {
		return fastMore
	}
	if b[d.i] == '}' {
		return fastDone
	}
	for {
		if d.i == len(b) {
			return fastMore
		}
		if b[d.i] != '"' {
			return fastFallback
		}
		// A member's key: only the exact names, each once, plain ASCII.
		j := d.i + 1
		for j < len(b) && b[j] != '"' {
			if c := b[j]; c < 0x20 || c == '\\' || c >= utf8.RuneSelf {
				return fastFallback
			}
			j++
		}
		if j == len(b) {
			return fastMore
		}
		key := b[d.i+1 : j]
		d.i = j + 1
		var bit uint8
		switch string(key) {
		case "query":
			bit = 1
		case "operationName":
			bit = 2
		case "documentId":
			bit = 4
		case "variables":
			bit = 8
		case "extensions":
			bit = 16
		default:
			return fastFallback
		}
		if seen&bit != 0 {
			return fastFallback
		}
		seen |= bit
		if st := d.expect(':'); st != fastOK {
			return st
		}
		d.ws()
		if d.i == len(b) {
			return fastMore
		}
		var st fastStatus
		switch c := b[d.i]; {
		case c == 'n':
			st = d.literal("null") // a string keeps "", a map is nil
		case bit <= 4 && c == '"':
			var s string
			s, st = d.str()
			switch bit {
			case 1:
				req.Query = s
			case 2:
				req.OperationName = s
			case 4:
				req.DocumentID = s
			}
		case bit > 4 && c == '{':
			var m map[string]any
			m, st = d.object()
			if bit == 8 {
				req.Variables = m
			} else {
				req.Extensions = m
			}
		default:
			return fastFallback
		}
		if st != fastOK {
			return st
		}
		d.ws()
		if d.i == len(b) {
			return fastMore
		}
		switch b[d.i] {
		case ',':
			d.i++
			d.ws()
		case '}':
			return fastDone
		default:
			return fastFallback
		}
	}
}

// ws skips JSON's blanks.
func (d *fastDecoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// expect skips blanks and c.
func (d *fastDecoder) expect(c byte) fastStatus {
	d.ws()
	if d.i == len(d.b) {
		return fastMore
	}
	if d.b[d.i] != c {
		return fastFallback
	}
	d.i++
	return fastOK
}

func (d *fastDecoder) literal(lit string) fastStatus {
	rest := d.b[d.i:]
	if len(rest) < len(lit) {
		if string(rest) == lit[:len(rest)] {
			return fastMore
		}
		return fastFallback
	}
	if string(rest[:len(lit)]) != lit {
		return fastFallback
	}
	d.i += len(lit)
	return fastOK
}

// str decodes the string at d.i (its opening quote): valid UTF-8, no
// control character, and no escape but the two-character ones.
// strStop is true for the bytes str must look at: the closing quote,
// a backslash and the control characters.
var strStop = func() (t [256]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// stopped notes, for the next pass, that the string starting at start
// was scanned up to j with these findings when the bytes ran out.
func (d *fastDecoder) stopped(start, j int, plain, ascii bool) {
	if d.resume != nil {
		*d.resume = strResume{start: start, j: j, plain: plain, ascii: ascii}
	}
}

func (d *fastDecoder) str() (string, fastStatus) {
	b := d.b
	start := d.i + 1
	j := start
	plain, ascii, closed := true, true, false
	if r := d.resume; r != nil && r.start == start {
		j, plain, ascii = r.j, r.plain, r.ascii
	}
	for !closed && j < len(b) {
		// Eight bytes at a time while they are plain ASCII (a query is
		// mostly that): aliases20's 1.9 KB query took 7.7 % of the
		// operation's CPU a byte at a time (issue 25).
		for j+8 <= len(b) && swar.Plain(binary.LittleEndian.Uint64(b[j:])) {
			j += 8
		}
		// Then a byte at a time up to the end of the word that stopped it.
		for end := min(j+8, len(b)); j < end; j++ {
			c := b[j]
			if c >= utf8.RuneSelf {
				ascii = false
				continue
			}
			if !strStop[c] { // the usual byte: one look-up, not three tests
				continue
			}
			if c == '"' {
				closed = true
				break
			}
			if c < 0x20 {
				return "", fastFallback
			}
			// c == '\\'
			plain = false
			j++
			if j == len(b) {
				d.stopped(start, j-1, plain, ascii) // at the backslash
				return "", fastMore
			}
			switch b[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			default:
				return "", fastFallback // \u, or invalid
			}
		}
	}
	if !closed {
		d.stopped(start, j, plain, ascii)
		return "", fastMore
	}
	raw := b[start:j]
	if !ascii && !utf8.Valid(raw) {
		return "", fastFallback
	}
	d.i = j + 1
	if plain {
		return string(raw), fastOK
	}
	// One allocation of the string's size at most (a builder's, which
	// String does not copy), the plain runs between escapes copied whole:
	// appended byte by byte, nodes(ids: [100 ids])'s 4 KB query, 200
	// escaped quotes, grew a buffer 10 times (21 KB a request) and then
	// copied it again into its string, a flood of refused requests'
	// largest cost (issue 22).
	var out strings.Builder
	out.Grow(len(raw))
	for {
		k := bytes.IndexByte(raw, '\\')
		if k < 0 {
			out.Write(raw)
			break
		}
		out.Write(raw[:k])
		c := raw[k+1]
		switch c {
		case 'b':
			c = '\b'
		case 'f':
			c = '\f'
		case 'n':
			c = '\n'
		case 'r':
			c = '\r'
		case 't':
			c = '\t'
		} // " \ /: itself
		out.WriteByte(c)
		raw = raw[k+2:]
	}
	return out.String(), fastOK
}

// value decodes any JSON value at d.i, as encoding/json decodes into an
// interface{} with UseNumber.
func (d *fastDecoder) value() (any, fastStatus) {
	if d.i == len(d.b) {
		return nil, fastMore
	}
	switch c := d.b[d.i]; {
	case c == '{':
		m, st := d.object()
		return m, st
	case c == '[':
		return d.array()
	case c == '"':
		return d.str()
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		return d.number()
	}
	return nil, fastFallback
}

func (d *fastDecoder) object() (map[string]any, fastStatus) {
	if d.depth++; d.depth > maxFastDepth {
		return nil, fastFallback
	}
	defer func() { d.depth-- }()
	d.i++ // {
	m := map[string]any{}
	d.ws()
	if d.i == len(d.b) {
		return nil, fastMore
	}
	if d.b[d.i] == '}' {
		d.i++
		return m, fastOK
	}
	for {
		if d.i == len(d.b) {
			return nil, fastMore
		}
		if d.b[d.i] != '"' {
			return nil, fastFallback
		}
		k, st := d.str()
		if st != fastOK {
			return nil, st
		}
		if st := d.expect(':'); st != fastOK {
			return nil, st
		}
		d.ws()
		v, st := d.value()
		if st != fastOK {
			return nil, st
		}
		m[k] = v // a repeated key: the last one, as encoding/json
		d.ws()
		if d.i == len(d.b) {
			return nil, fastMore
		}
		switch d.b[d.i] {
		case ',':
			d.i++
			d.ws()
		case '}':
			d.i++
			return m, fastOK
		default:
			return nil, fastFallback
		}
	}
}

func (d *fastDecoder) array() (any, fastStatus) {
	if d.depth++; d.depth > maxFastDepth {
		return nil, fastFallback
	}
	defer func() { d.depth-- }()
	d.i++ // [
	a := make([]any, 0)
	d.ws()
	if d.i == len(d.b) {
		return nil, fastMore
	}
	if d.b[d.i] == ']' {
		d.i++
		return a, fastOK
	}
	for {
		d.ws()
		v, st := d.value()
		if st != fastOK {
			return nil, st
		}
		a = append(a, v)
		d.ws()
		if d.i == len(d.b) {
			return nil, fastMore
		}
		switch d.b[d.i] {
		case ',':
			d.i++
		case ']':
			d.i++
			return a, fastOK
		default:
			return nil, fastFallback
		}
	}
}

// number checks JSON's number grammar and keeps the text (UseNumber). A
// number that reaches the end of what was read may go on: more.
func (d *fastDecoder) number() (any, fastStatus) {
	b, i := d.b, d.i
	digits := func() {
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
	}
	isDigit := func() bool { return i < len(b) && '0' <= b[i] && b[i] <= '9' }
	if b[i] == '-' {
		i++
	}
	if i == len(b) {
		return nil, fastMore
	}
	switch {
	case b[i] == '0':
		i++
	case isDigit():
		digits()
	default:
		return nil, fastFallback
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i == len(b) {
			return nil, fastMore
		}
		if !isDigit() {
			return nil, fastFallback
		}
		digits()
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i == len(b) {
			return nil, fastMore
		}
		if !isDigit() {
			return nil, fastFallback
		}
		digits()
	}
	if i == len(b) {
		return nil, fastMore
	}
	n := json.Number(string(b[d.i:i]))
	d.i = i
	return n, fastOK
}
