// The POST body's decoder: the common body (query, operationName,
// variables, extensions and documentId, each once, with plain keys) is
// decoded by hand; every other body, and every body in doubt (\u escapes,
// invalid UTF-8, unknown or repeated members, wrong types, bad syntax),
// goes to encoding/json, which it mirrors (graphql.RawParams under
// UseNumber): TestDecodePOSTDifferential and FuzzDecodePOST compare both.
// Every string it returns is a copy: nothing points into the body's buffer.

package gqlhttp

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/99designs/gqlgen/graphql"

	"paygraph/internal/swar"
)

// postBody is what a POST body carries.
type postBody struct {
	graphql.RawParams
	DocumentID string `json:"documentId"` // persisted documents (graph/trusted)
}

// decodePOSTJSON is the reference decoder: encoding/json, the first
// JSON value of body (what follows it is not read), numbers as json.Number.
func decodePOSTJSON(body []byte, req *postBody) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	return dec.Decode(req)
}

// decodePOST decodes the first JSON value of body into req, as
// decodePOSTJSON would: by hand when it can, else by encoding/json.
func decodePOST(body []byte, req *postBody) error {
	if decodeFast(body, req) == fastDone {
		return nil
	}
	*req = postBody{}
	return decodePOSTJSON(body, req)
}

type fastStatus int8

const (
	fastOK       fastStatus = iota // a part decoded; go on
	fastDone                       // the object decoded
	fastFallback                   // cut short, or not for the hand decoder: encoding/json decides
)

// maxFastDepth: deeper variables go to encoding/json (whose own bound is
// 10,000).
const maxFastDepth = 64

type fastDecoder struct {
	b     []byte
	i     int
	depth int
}

// decodeFast decodes b, the body so far, into req.
func decodeFast(b []byte, req *postBody) fastStatus {
	d := fastDecoder{b: b}
	if st := d.expect('{'); st != fastOK {
		return st
	}
	var seen uint8
	d.ws()
	if d.i == len(b) {
		return fastFallback
	}
	if b[d.i] == '}' {
		return fastDone
	}
	for {
		if d.i == len(b) {
			return fastFallback
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
			return fastFallback
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
			return fastFallback
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
			return fastFallback
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
		return fastFallback
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
			return fastFallback
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

func (d *fastDecoder) str() (string, fastStatus) {
	b := d.b
	start := d.i + 1
	j := start
	plain, ascii, closed := true, true, false
	for !closed && j < len(b) {
		// Eight bytes at a time while they are plain ASCII.
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
				return "", fastFallback
			}
			switch b[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			default:
				return "", fastFallback // \u, or invalid
			}
		}
	}
	if !closed {
		return "", fastFallback
	}
	raw := b[start:j]
	if !ascii && !utf8.Valid(raw) {
		return "", fastFallback
	}
	d.i = j + 1
	if plain {
		return string(raw), fastOK
	}
	// One allocation of the string's size at most, the plain runs between
	// escapes copied whole.
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
		return nil, fastFallback
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
		return nil, fastFallback
	}
	if d.b[d.i] == '}' {
		d.i++
		return m, fastOK
	}
	for {
		if d.i == len(d.b) {
			return nil, fastFallback
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
			return nil, fastFallback
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
		return nil, fastFallback
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
			return nil, fastFallback
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
		return nil, fastFallback
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
			return nil, fastFallback
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
			return nil, fastFallback
		}
		if !isDigit() {
			return nil, fastFallback
		}
		digits()
	}
	if i == len(b) {
		return nil, fastFallback
	}
	n := json.Number(string(b[d.i:i]))
	d.i = i
	return n, fastOK
}
