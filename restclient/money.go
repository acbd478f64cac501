package restclient

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Paisa is an exact amount in paisa (1 taka = 100 paisa), within ±(2^53-1): a
// JSON number keeps it.
type Paisa int64

// MaxSafePaisa is the largest magnitude ParseTaka accepts: 2^53-1.
const MaxSafePaisa Paisa = 1<<53 - 1

const maxSafe = uint64(MaxSafePaisa)

// Errors wrapped by ParseTaka (test them with errors.Is).
var (
	ErrAmountSyntax    = errors.New("not a decimal number")
	ErrAmountPrecision = errors.New("more precise than one paisa") // a non-zero digit below one paisa
	ErrAmountRange     = errors.New("out of range (beyond 2^53-1 paisa)")
)

// ParseTaka parses a decimal number of taka (JSON's grammar, leading zeros
// tolerated) into exact paisa, never through a float; digits below one paisa
// must be zero ("19.990", not "1.999").
func ParseTaka(s string) (Paisa, error) {
	v, err := parseDecimal(s, 2)
	if err != nil {
		q := s
		if len(q) > 64 {
			q = q[:64] + "..."
		}
		return 0, fmt.Errorf("restclient: invalid taka amount %q: %w", q, err)
	}
	return Paisa(v), nil
}

// parseExactInt parses an exact integer within ±(2^53-1): "1999", "1999.0" and
// "1.999e3" are 1999.
func parseExactInt(s string) (int64, error) { return parseDecimal(s, 0) }

// parseDecimal returns s times 10^shift, an integer within ±maxSafe, or an
// ErrAmount error; the integer and fraction digits are read as one run, whose
// trailing zeros only scale it.
func parseDecimal(s string, shift int) (int64, error) {
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	exp := 0
	e := strings.IndexByte(s, 'e') // not IndexAny: it is slower
	if e < 0 {
		e = strings.IndexByte(s, 'E')
	}
	if e >= 0 {
		digits := s[e+1:]
		if digits != "" && (digits[0] == '+' || digits[0] == '-') {
			digits = digits[1:]
		}
		if !allDigits(digits) {
			return 0, ErrAmountSyntax
		}
		for i := 0; i < len(digits); i++ {
			if exp < 1e9 { // saturate: anything this large is out of range anyway
				exp = exp*10 + int(digits[i]-'0')
			}
		}
		if s[e+1] == '-' {
			exp = -exp
		}
		s = s[:e]
	}
	whole, frac, dot := strings.Cut(s, ".")
	if !allDigits(whole) || dot && !allDigits(frac) {
		return 0, ErrAmountSyntax
	}
	n := len(whole) + len(frac)
	digit := func(i int) byte {
		if i < len(whole) {
			return whole[i]
		}
		return frac[i-len(whole)]
	}
	lo, hi := 0, n // the run without its leading and trailing zeros
	for lo < n && digit(lo) == '0' {
		lo++
	}
	if lo == n {
		return 0, nil
	}
	for digit(hi-1) == '0' {
		hi--
	}
	k := n - hi - len(frac) + exp + shift // the power of ten the run is scaled by
	if k < 0 {
		return 0, ErrAmountPrecision
	}
	if hi-lo > 16 { // more digits than maxSafe: also keeps m from overflowing
		return 0, ErrAmountRange
	}
	var m uint64
	for i := lo; i < hi; i++ {
		m = m*10 + uint64(digit(i)-'0')
	}
	for ; k > 0 && m <= maxSafe; k-- {
		m *= 10
	}
	if m > maxSafe {
		return 0, ErrAmountRange
	}
	v := int64(m)
	if neg {
		v = -v
	}
	return v, nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// String renders the amount as taka with two decimals: "1250.00", "-0.50".
func (p Paisa) String() string {
	var buf [24]byte
	return string(p.AppendTaka(buf[:0]))
}

// AppendTaka appends the text of String to b.
func (p Paisa) AppendTaka(b []byte) []byte {
	u := uint64(p)
	if p < 0 {
		b = append(b, '-')
		u = -u // two's complement: also right for math.MinInt64
	}
	b = strconv.AppendUint(b, u/100, 10)
	f := u % 100
	return append(b, '.', byte('0'+f/10), byte('0'+f%10))
}
