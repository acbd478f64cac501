// Package swar tests eight bytes at a time (SIMD within a register) for
// the bytes that JSON's readers and writers must stop at, shared by
// gqlhttp's POST decoder, graph's string writer and restclient's scanner.
// Each test is exact: never true for a word holding a byte it must stop
// at (TestWordsMatchBytes).
package swar

const ones, highs = 0x0101010101010101, 0x8080808080808080

// Plain reports whether every byte of x is printable ASCII other than '"'
// and '\\' (0x20 to 0x7f): what a JSON string holds as it is, and gqlgen's
// string writer writes as it is.
func Plain(x uint64) bool {
	q := x ^ (ones * '"')
	bs := x ^ (ones * '\\')
	stop := (x - ones*0x20) | (q - ones) | (bs - ones) // a high bit where a byte is below 0x20, a quote or a backslash (or x's own high bit)
	return (stop|x)&highs == 0
}

// StopMask is Plain's test with each byte's answer in place: the high
// bit of every byte of x that is not Plain's is set, and a borrow sets no
// bit below the first such byte, so the lowest set bit is exactly the
// first byte to stop at (restclient's scanner finds where a run of plain
// bytes ends with it). Plain(x) is StopMask(x) == 0, in fewer steps.
func StopMask(x uint64) uint64 {
	q := x ^ (ones * '"')
	bs := x ^ (ones * '\\')
	return (x | (x-ones*0x20)&^x | (q-ones)&^q | (bs-ones)&^bs) & highs
}

// PlainString reports whether every byte of s is Plain's: eight bytes at
// a time, then one at a time.
func PlainString(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		if !Plain(load(s[i : i+8])) {
			return false
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// load is s's eight bytes as a little-endian word (one load: the compiler
// combines the shifts).
func load(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}
