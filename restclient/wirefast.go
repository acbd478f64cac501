package restclient

import (
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"strings"
	"unicode/utf8"

	"paygraph/internal/swar"
)

// A fast path for the two hot REST bodies, a payment and a page: one pass,
// every string a substring of one copy of the body, the nullable ones in
// shared blocks. On anything it is not certain to decode exactly as
// encoding/json would it gives up, leaves the struct zero, and decodeBody uses
// encoding/json (FuzzFastDecodeMatchesJSON). When to delete it:
// docs/performance.md.

// fastDecoder is a wire struct with a fast path: decodeFast decodes body, or
// leaves it zero (false).
type fastDecoder interface {
	decodeFast(body []byte) bool
}

func (w *wirePayment) decodeFast(body []byte) bool {
	s := scanner{src: string(body), b: body}
	if w.strings != nil {
		s.block = w.strings[:0]
	}
	if s.top(func() bool { return s.payment(w) }) {
		return true
	}
	*w = wirePayment{}
	return false
}

func (w *wirePage) decodeFast(body []byte) bool {
	s := scanner{src: string(body), b: body}
	if s.top(func() bool { return s.page(w) }) {
		return true
	}
	*w = wirePage{}
	return false
}

// maxFastDepth bounds the nesting in unknown values; nullable strings share
// blocks (a payment's 8).
const (
	maxFastDepth     = 64
	firstStringBlock = 8
	stringBlock      = 64
)

// scanner walks src, a copy of the body that the decoded strings share.
type scanner struct {
	src   string
	b     []byte // the body src copies, read eight bytes at a time (plainRun)
	i     int
	depth int
	block []string // the current block of nullable strings
}

// top decodes one object with value, then only JSON whitespace.
func (s *scanner) top(value func() bool) bool {
	s.ws()
	if !value() {
		return false
	}
	s.ws()
	return s.i == len(s.src)
}

// ws passes over JSON whitespace (every byte of it is below '!').
func (s *scanner) ws() {
	if s.i < len(s.src) && s.src[s.i] <= ' ' {
		s.wsRun()
	}
}

func (s *scanner) wsRun() {
	for s.i < len(s.src) {
		switch s.src[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) peek() byte {
	if s.i < len(s.src) {
		return s.src[s.i]
	}
	return 0
}

// members calls member at each key's value of the object at '{', which says if
// it decoded or skipped it.
func (s *scanner) members(member func(key string) bool) bool {
	if s.peek() != '{' {
		return false
	}
	s.i++
	s.ws()
	if s.peek() == '}' {
		s.i++
		return true
	}
	for {
		key, ok := s.key()
		if !ok {
			return false
		}
		s.ws()
		if s.peek() != ':' {
			return false
		}
		s.i++
		s.ws()
		if !member(key) {
			return false
		}
		s.ws()
		switch s.peek() {
		case ',':
			s.i++
			s.ws()
		case '}':
			s.i++
			return true
		default:
			return false
		}
	}
}

// key reads an object key; one with escapes or non-ASCII bytes is left to
// encoding/json.
func (s *scanner) key() (string, bool) {
	src := s.src
	start := s.i + 1
	if start > len(src) || src[start-1] != '"' {
		return "", false
	}
	j := start
	for j < len(src) && plainByte[src[j]] { // keys are short: no plainRun
		j++
	}
	if j < len(src) && src[j] == '"' {
		s.i = j + 1
		return src[start:j], true
	}
	return "", false // '\\', a control or non-ASCII byte, or the end
}

// plainRun returns the index of the first byte from j not plainByte (or len),
// 8 at a time.
func (s *scanner) plainRun(j int) int {
	b := s.b
	for j+8 <= len(b) {
		if special := swar.StopMask(binary.LittleEndian.Uint64(b[j:])); special != 0 {
			return j + bits.TrailingZeros64(special)/8
		}
		j += 8
	}
	for j < len(b) && plainByte[b[j]] {
		j++
	}
	return j
}

// plainByte: a string holds the byte as is and it ends nothing (printable
// ASCII but '"' and '\\').
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// unknown skips the value of a key not in known, even case-insensitively.
func (s *scanner) unknown(key string, known []string) bool {
	for _, k := range known {
		if strings.EqualFold(key, k) {
			return false
		}
	}
	return s.skip()
}

// str reads a JSON string: a substring of the body if unescaped valid UTF-8,
// else encoding/json's.
func (s *scanner) str() (string, bool) {
	src := s.src
	start := s.i
	if start >= len(src) || src[start] != '"' {
		return "", false
	}
	// The usual string: plain bytes up to its closing quote.
	j := s.plainRun(start + 1)
	if j < len(src) && src[j] == '"' {
		s.i = j + 1
		return src[start+1 : j], true
	}
	if !s.skipString(j) {
		return "", false
	}
	raw := src[start:s.i]
	if strings.IndexByte(raw, '\\') < 0 && utf8.ValidString(raw) {
		return raw[1 : len(raw)-1], true
	}
	var out string
	if json.Unmarshal([]byte(raw), &out) != nil {
		return "", false
	}
	return out, true
}

// escape reports whether a valid JSON escape starts at src[j] ('\\').
func (s *scanner) escape(j int) bool {
	if j+1 >= len(s.src) {
		return false
	}
	switch s.src[j+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return true
	case 'u':
		if j+6 > len(s.src) {
			return false
		}
		for _, c := range []byte(s.src[j+2 : j+6]) {
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
		return true
	}
	return false
}

func (s *scanner) number() (string, bool) {
	start, j := s.i, s.i
	n := len(s.src)
	digits := func() bool {
		k := j
		for j < n && '0' <= s.src[j] && s.src[j] <= '9' {
			j++
		}
		return j > k
	}
	if j < n && s.src[j] == '-' {
		j++
	}
	switch {
	case j < n && s.src[j] == '0':
		j++
	case j < n && '1' <= s.src[j] && s.src[j] <= '9':
		digits()
	default:
		return "", false
	}
	if j < n && s.src[j] == '.' {
		j++
		if !digits() {
			return "", false
		}
	}
	if j < n && (s.src[j] == 'e' || s.src[j] == 'E') {
		j++
		if j < n && (s.src[j] == '+' || s.src[j] == '-') {
			j++
		}
		if !digits() {
			return "", false
		}
	}
	s.i = j
	return s.src[start:j], true
}

func (s *scanner) literal(word string) bool {
	if strings.HasPrefix(s.src[s.i:], word) {
		s.i += len(word)
		return true
	}
	return false
}

// skip validates and passes over any JSON value.
func (s *scanner) skip() bool {
	switch c := s.peek(); {
	case c == '"':
		return s.skipString(s.i + 1)
	case c == '{':
		if s.depth++; s.depth > maxFastDepth {
			return false
		}
		ok := s.members(func(string) bool { return s.skip() })
		s.depth--
		return ok
	case c == '[':
		if s.depth++; s.depth > maxFastDepth {
			return false
		}
		ok := s.elements(s.skip)
		s.depth--
		return ok
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	default:
		_, ok := s.number()
		return ok
	}
}

// skipString passes over the string at s.i from its byte j.
func (s *scanner) skipString(j int) bool {
	for ; j < len(s.src); j++ {
		switch c := s.src[j]; {
		case c == '"':
			s.i = j + 1
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if !s.escape(j) {
				return false
			}
			if s.src[j+1] == 'u' {
				j += 5
			} else {
				j++
			}
		}
	}
	return false
}

// elements calls element at each item of the array at '['.
func (s *scanner) elements(element func() bool) bool {
	if s.peek() != '[' {
		return false
	}
	s.i++
	s.ws()
	if s.peek() == ']' {
		s.i++
		return true
	}
	for {
		if !element() {
			return false
		}
		s.ws()
		switch s.peek() {
		case ',':
			s.i++
			s.ws()
		case ']':
			s.i++
			return true
		default:
			return false
		}
	}
}

// The value kinds as encoding/json decodes them: null leaves a value as is, a
// pointer nil; else give up.

func (s *scanner) plainString(dst *string) bool {
	if s.literal("null") {
		return true
	}
	v, ok := s.str()
	*dst = v
	return ok
}

func (s *scanner) nullableString(dst **string) bool {
	if s.literal("null") {
		*dst = nil
		return true
	}
	v, ok := s.str()
	if !ok {
		return false
	}
	if len(s.block) == cap(s.block) {
		n := stringBlock
		if s.block == nil {
			n = firstStringBlock
		}
		s.block = make([]string, 0, n)
	}
	s.block = append(s.block, v)
	*dst = &s.block[len(s.block)-1]
	return true
}

func (s *scanner) numberText(dst *json.Number) bool {
	if s.literal("null") {
		return true
	}
	v, ok := s.number()
	*dst = json.Number(v)
	return ok
}

func (s *scanner) boolean(dst *bool) bool {
	switch {
	case s.literal("null"):
	case s.literal("true"):
		*dst = true
	case s.literal("false"):
		*dst = false
	default:
		return false
	}
	return true
}

// errorField decodes "error" as errField.UnmarshalJSON does.
func (s *scanner) errorField(dst *errField) bool {
	if s.peek() != '"' {
		return s.skip()
	}
	v, ok := s.str()
	dst.msg, dst.set = v, ok
	return ok
}

// once records bit in seen, false if it was there (a repeated key is left to
// encoding/json).
func once(seen *uint16, bit uint16) bool {
	if *seen&bit != 0 {
		return false
	}
	*seen |= bit
	return true
}

var (
	customerKeys = []string{"name", "email", "phone", "address", "city"}
	paymentKeys  = []string{"id", "status", "amount", "currency", "transaction_id", "payment_method", "customer", "created_at", "updated_at", "error"}
	pageKeys     = []string{"data", "has_more", "next_cursor", "error"}
)

func (s *scanner) customer(c *wireCustomer) bool {
	if s.literal("null") {
		return true
	}
	var seen uint16
	return s.members(func(key string) bool {
		switch key {
		case "name":
			return once(&seen, 1<<0) && s.nullableString(&c.Name)
		case "email":
			return once(&seen, 1<<1) && s.nullableString(&c.Email)
		case "phone":
			return once(&seen, 1<<2) && s.nullableString(&c.Phone)
		case "address":
			return once(&seen, 1<<3) && s.nullableString(&c.Address)
		case "city":
			return once(&seen, 1<<4) && s.nullableString(&c.City)
		}
		return s.unknown(key, customerKeys)
	})
}

func (s *scanner) payment(w *wirePayment) bool {
	var seen uint16
	return s.members(func(key string) bool {
		switch key {
		case "id":
			return once(&seen, 1<<0) && s.plainString(&w.ID)
		case "status":
			return once(&seen, 1<<1) && s.plainString(&w.Status)
		case "amount":
			return once(&seen, 1<<2) && s.numberText(&w.Amount)
		case "currency":
			return once(&seen, 1<<3) && s.nullableString(&w.Currency)
		case "transaction_id":
			return once(&seen, 1<<4) && s.nullableString(&w.TransactionID)
		case "payment_method":
			return once(&seen, 1<<5) && s.nullableString(&w.PaymentMethod)
		case "customer":
			return once(&seen, 1<<6) && s.customer(&w.Customer)
		case "created_at":
			return once(&seen, 1<<7) && s.plainString(&w.CreatedAt)
		case "updated_at":
			return once(&seen, 1<<8) && s.plainString(&w.UpdatedAt)
		case "error":
			return once(&seen, 1<<9) && s.errorField(&w.Error)
		}
		return s.unknown(key, paymentKeys)
	})
}

func (s *scanner) page(w *wirePage) bool {
	var seen uint16
	return s.members(func(key string) bool {
		switch key {
		case "data":
			return once(&seen, 1<<0) && s.payments(&w.Data)
		case "has_more":
			return once(&seen, 1<<1) && s.boolean(&w.HasMore)
		case "next_cursor":
			return once(&seen, 1<<2) && s.nullableString(&w.NextCursor)
		case "error":
			return once(&seen, 1<<3) && s.errorField(&w.Error)
		}
		return s.unknown(key, pageKeys)
	})
}

// payments decodes the data array: null leaves it nil, [] makes it empty.
func (s *scanner) payments(dst *[]wirePayment) bool {
	if s.literal("null") {
		return true
	}
	out := make([]wirePayment, 0, min(max(len(s.src)/256, 1), 128)) // a payment is over 256 bytes
	ok := s.elements(func() bool {
		if s.peek() != '{' { // null items and other values: encoding/json
			return false
		}
		out = append(out, wirePayment{})
		return s.payment(&out[len(out)-1])
	})
	*dst = out
	return ok
}
