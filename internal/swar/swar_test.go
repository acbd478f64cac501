package swar

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
	"testing"
	"unicode/utf8"
)

// plainByte is the byte-at-a-time table the word tests stand in for.
func plainByte(c byte) bool { return c >= 0x20 && c < utf8.RuneSelf && c != '"' && c != '\\' }

// TestWordsMatchBytes: each word test against the byte-at-a-time test it
// stands in for: never true for a word holding a byte it must stop at,
// and true for every other byte among plain ones (each of 256 bytes at
// each of 8 places), and on a million random words. (The same test for
// appendMarshalled's bytes, which track strings, was measured and not
// kept: its JSON has a quote every few bytes, and a word tried after each
// plain byte made it 2.5 times slower.)
func TestWordsMatchBytes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		word  func(uint64) bool
		stops func(byte) bool
	}{
		{"Plain", Plain, func(c byte) bool { return !plainByte(c) }},
		{"StopMask", func(x uint64) bool { return StopMask(x) == 0 }, func(c byte) bool { return !plainByte(c) }},
		{"PlainString", func(x uint64) bool {
			var w [8]byte
			binary.LittleEndian.PutUint64(w[:], x)
			return PlainString(string(w[:]))
		}, func(c byte) bool { return !plainByte(c) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
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

// TestStopMaskFirst: StopMask's lowest set bit is the first byte that is
// not plain, whatever follows it (random words).
func TestStopMaskFirst(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	var w [8]byte
	for range 1_000_000 {
		x := r.Uint64()
		if r.IntN(2) == 0 {
			x &= 0x7f7f7f7f7f7f7f7f
		}
		binary.LittleEndian.PutUint64(w[:], x)
		first := 8
		for i, c := range w {
			if !plainByte(c) {
				first = i
				break
			}
		}
		m := StopMask(x)
		if got := bits.TrailingZeros64(m) / 8; m != 0 && got != first || m == 0 && first != 8 {
			t.Fatalf("%#x: StopMask %#x, first stop at %d", x, m, first)
		}
	}
}

// TestPlainStringTails: PlainString looks at every byte of strings of
// every length up to 24, a stop byte at each place (the words and the
// tail after them).
func TestPlainStringTails(t *testing.T) {
	t.Parallel()
	for n := range 25 {
		b := make([]byte, n)
		for i := range b {
			b[i] = 'x'
		}
		if !PlainString(string(b)) {
			t.Fatalf("%q: false", b)
		}
		for at := range n {
			for _, c := range []byte{'"', '\\', 0x1f, 0x80, 0xff} {
				b[at] = c
				if PlainString(string(b)) {
					t.Fatalf("%q: true", b)
				}
			}
			b[at] = 'x'
		}
	}
}

func BenchmarkPlainString(b *testing.B) {
	s := "pay_prod_2b28a205efadebb77e97887cfb152453"
	for b.Loop() {
		if !PlainString(s) {
			b.Fatal(s)
		}
	}
}
