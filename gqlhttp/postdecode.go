// The POST body's decoder: the common body (the five members, each once, plain
// keys) is decoded by hand, any body in doubt by encoding/json, which it
// mirrors (TestDecodePOSTDifferential, FuzzDecodePOST). Every string it
// returns is a copy: nothing points into the pooled buffer.

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

// decodePOSTJSON is the reference: encoding/json, body's first value, json.Number.
func decodePOSTJSON(body []byte, req *postBody) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	return dec.Decode(req)
}

// decodePOST is decodePOSTJSON, by hand when it can.
func decodePOST(body []byte, req *postBody) error {
	if decodeFast(body, req) {
		return nil
	}
	*req = postBody{}
	return decodePOSTJSON(body, req)
}

// maxFastDepth: deeper variables go to encoding/json (bounded at 10,000).
const maxFastDepth = 64

// fastDecoder is the hand decoder; false from a method leaves body to encoding/json.
type fastDecoder struct {
	b     []byte
	i     int
	depth int
}

// decodeFast decodes body into req, or reports false.
func decodeFast(b []byte, req *postBody) bool {
	d := fastDecoder{b: b}
	if !d.expect('{') {
		return false
	}
	var seen uint8
	d.ws()
	if d.i == len(b) {
		return false
	}
	if b[d.i] == '}' {
		return true
	}
	for {
		if d.i == len(b) || b[d.i] != '"' {
			return false
		}
		// A member's key: only the exact names, each once, plain ASCII.
		j := d.i + 1
		for j < len(b) && b[j] != '"' {
			if c := b[j]; c < 0x20 || c == '\\' || c >= utf8.RuneSelf {
				return false
			}
			j++
		}
		if j == len(b) {
			return false
		}
		key := b[d.i+1 : j]
		d.i = j + 1
		var bit uint8
		var str *string         // a string member's field
		var obj *map[string]any // an object member's
		switch string(key) {
		case "query":
			bit, str = 1, &req.Query
		case "operationName":
			bit, str = 2, &req.OperationName
		case "documentId":
			bit, str = 4, &req.DocumentID
		case "variables":
			bit, obj = 8, &req.Variables
		case "extensions":
			bit, obj = 16, &req.Extensions
		default:
			return false
		}
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		if !d.expect(':') {
			return false
		}
		d.ws()
		if d.i == len(b) {
			return false
		}
		var ok bool
		switch c := b[d.i]; {
		case c == 'n':
			ok = d.literal("null") // a string keeps "", a map is nil
		case str != nil && c == '"':
			*str, ok = d.str()
		case obj != nil && c == '{':
			*obj, ok = d.object()
		}
		if !ok {
			return false
		}
		d.ws()
		if d.i == len(b) {
			return false
		}
		switch b[d.i] {
		case ',':
			d.i++
			d.ws()
		case '}':
			return true
		default:
			return false
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
func (d *fastDecoder) expect(c byte) bool {
	d.ws()
	if d.i == len(d.b) || d.b[d.i] != c {
		return false
	}
	d.i++
	return true
}

func (d *fastDecoder) literal(lit string) bool {
	rest := d.b[d.i:]
	if len(rest) < len(lit) || string(rest[:len(lit)]) != lit {
		return false
	}
	d.i += len(lit)
	return true
}

// strStop marks the bytes str must look at: '"', '\\' and the control characters.
var strStop = func() (t [256]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// str decodes the string at d.i: valid UTF-8, no control character, no \u.
func (d *fastDecoder) str() (string, bool) {
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
				return "", false
			}
			// c == '\\'
			plain = false
			j++
			if j == len(b) {
				return "", false
			}
			switch b[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			default:
				return "", false // \u, or invalid
			}
		}
	}
	if !closed {
		return "", false
	}
	raw := b[start:j]
	if !ascii && !utf8.Valid(raw) {
		return "", false
	}
	d.i = j + 1
	if plain {
		return string(raw), true
	}
	// One allocation, the plain runs between escapes copied whole.
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
		if e := strings.IndexByte("bfnrt", c); e >= 0 {
			c = "\b\f\n\r\t"[e]
		} // " \ /: itself
		out.WriteByte(c)
		raw = raw[k+2:]
	}
	return out.String(), true
}

// value decodes any JSON value at d.i, as encoding/json into an any with UseNumber.
func (d *fastDecoder) value() (any, bool) {
	if d.i == len(d.b) {
		return nil, false
	}
	switch c := d.b[d.i]; {
	case c == '{':
		m, ok := d.object()
		return m, ok
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
	return nil, false
}

func (d *fastDecoder) object() (map[string]any, bool) {
	if d.depth++; d.depth > maxFastDepth {
		return nil, false
	}
	defer func() { d.depth-- }()
	d.i++ // {
	m := map[string]any{}
	d.ws()
	if d.i == len(d.b) {
		return nil, false
	}
	if d.b[d.i] == '}' {
		d.i++
		return m, true
	}
	for {
		if d.i == len(d.b) || d.b[d.i] != '"' {
			return nil, false
		}
		k, ok := d.str()
		if !ok || !d.expect(':') {
			return nil, false
		}
		d.ws()
		v, ok := d.value()
		if !ok {
			return nil, false
		}
		m[k] = v // a repeated key: the last one, as encoding/json
		d.ws()
		if d.i == len(d.b) {
			return nil, false
		}
		switch d.b[d.i] {
		case ',':
			d.i++
			d.ws()
		case '}':
			d.i++
			return m, true
		default:
			return nil, false
		}
	}
}

func (d *fastDecoder) array() (any, bool) {
	if d.depth++; d.depth > maxFastDepth {
		return nil, false
	}
	defer func() { d.depth-- }()
	d.i++ // [
	a := make([]any, 0)
	d.ws()
	if d.i == len(d.b) {
		return nil, false
	}
	if d.b[d.i] == ']' {
		d.i++
		return a, true
	}
	for {
		d.ws()
		v, ok := d.value()
		if !ok {
			return nil, false
		}
		a = append(a, v)
		d.ws()
		if d.i == len(d.b) {
			return nil, false
		}
		switch d.b[d.i] {
		case ',':
			d.i++
		case ']':
			d.i++
			return a, true
		default:
			return nil, false
		}
	}
}

// number checks JSON's number grammar, keeping the text (UseNumber); one
// ending the body fails.
func (d *fastDecoder) number() (any, bool) {
	b, i := d.b, d.i
	isDigit := func() bool { return i < len(b) && '0' <= b[i] && b[i] <= '9' }
	digits := func() bool {
		if !isDigit() {
			return false
		}
		for isDigit() {
			i++
		}
		return true
	}
	if b[i] == '-' {
		i++
	}
	if i < len(b) && b[i] == '0' {
		i++
	} else if !digits() {
		return nil, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return nil, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return nil, false
		}
	}
	if i == len(b) {
		return nil, false
	}
	n := json.Number(string(b[d.i:i]))
	d.i = i
	return n, true
}
