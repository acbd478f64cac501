package gqlhttp

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"unicode/utf8"
)

// The eight-bytes-at-a-time test of postdecode.go (plainASCII) against
// the byte-at-a-time table it stands in for: never true for a word
// holding a byte the table marks (or a byte above ASCII), and true for
// every plain byte among plain ones. (The same for appendMarshalled's
// bytes was measured and not kept: its JSON has a quote every few bytes,
// and a word tried after each plain byte made it 2.5 times slower.)
func TestWordTestsMatchTheirTables(t *testing.T) {
	for _, tc := range []struct {
		name  string
		word  func(uint64) bool
		stops func(byte) bool
	}{
		{"plainASCII (str)", plainASCII, func(c byte) bool { return c >= utf8.RuneSelf || strStop[c] }},
		{"htmlPlain (appendHTMLSafe)", htmlPlain, func(c byte) bool { return c >= utf8.RuneSelf || c == '<' || c == '>' || c == '&' }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w [8]byte
			for c := range 256 {
				for at := range 8 {
					for k := range w {
						w[k] = 'a'
					}
					w[at] = byte(c)
					if got, want := tc.word(binary.LittleEndian.Uint64(w[:])), !tc.stops(byte(c)); got != want {
						t.Fatalf("byte %#x at %d among 'a': %v, want %v", c, at, got, want)
					}
				}
			}
			r := rand.New(rand.NewPCG(1, 2))
			for range 1_000_000 {
				x := r.Uint64()
				if r.IntN(2) == 0 {
					x &= 0x7f7f7f7f7f7f7f7f // ASCII words, where a miss could hide
				}
				if !tc.word(x) {
					continue
				}
				binary.LittleEndian.PutUint64(w[:], x)
				for _, c := range w {
					if tc.stops(c) {
						t.Fatalf("%#x: true, but holds %#x", x, c)
					}
				}
			}
		})
	}
}
