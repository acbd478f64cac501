package restclient

import (
	"errors"
	"fmt"
	"strconv"
)

// Paisa is an exact amount of money in paisa (1 taka = 100 paisa), within
// ±(2^53-1) so that it survives a JSON number (a float64) unchanged.
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
// tolerated) into exact paisa, never through a float; digits below one
// paisa must be zero ("19.990" is fine, "1.999" an error).
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

// parseExactInt parses a decimal number that must be an exact integer
// within ±(2^53-1): "1999", "1999.0" and "1.999e3" are 1999.
func parseExactInt(s string) (int64, error) { return parseDecimal(s, 0) }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// parseDecimal returns s times 10^shift, which must be an integer within
// ±maxSafe, or an ErrAmount error. Trailing zeros are counted in pending,
// so that they never overflow m; big: the digits exceed maxSafe.
func parseDecimal(s string, shift int) (int64, error) {
	i, n := 0, len(s)
	neg := false
	if i < n && s[i] == '-' {
		neg = true
		i++
	}
	var m uint64
	pending, frac := 0, 0
	big := false
	add := func(c byte) {
		d := uint64(c - '0')
		if d == 0 {
			if m != 0 || big {
				pending++
			}
			return
		}
		if !big {
			for j := 0; j <= pending; j++ {
				if m > maxSafe/10 {
					big = true
					break
				}
				m *= 10
			}
			if !big {
				m += d
				if m > maxSafe {
					big = true
				}
			}
		}
		pending = 0
	}
	digits := func() int { // adds a run of digits, returns its length
		start := i
		for ; i < n && isDigit(s[i]); i++ {
			add(s[i])
		}
		return i - start
	}
	if digits() == 0 {
		return 0, ErrAmountSyntax
	}
	if i < n && s[i] == '.' {
		i++
		if frac = digits(); frac == 0 {
			return 0, ErrAmountSyntax
		}
	}
	exp := 0
	if i < n && (s[i] == 'e' || s[i] == 'E') {
		i++
		eneg := false
		if i < n && (s[i] == '+' || s[i] == '-') {
			eneg = s[i] == '-'
			i++
		}
		start := i
		for ; i < n && isDigit(s[i]); i++ {
			if exp < 1e9 { // saturate: anything this large is out of range anyway
				exp = exp*10 + int(s[i]-'0')
			}
		}
		if i == start {
			return 0, ErrAmountSyntax
		}
		if eneg {
			exp = -exp
		}
	}
	if i != n {
		return 0, ErrAmountSyntax
	}
	if m == 0 && !big {
		return 0, nil
	}
	k := pending - frac + exp + shift
	if k < 0 {
		return 0, ErrAmountPrecision
	}
	if big {
		return 0, ErrAmountRange
	}
	for ; k > 0; k-- {
		if m > maxSafe/10 {
			return 0, ErrAmountRange
		}
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
