// Package scalar implements the contract's custom scalars (DateTime,
// Decimal, SafeInt) as gqlgen marshal/unmarshal function pairs over the
// exact Go types the rest of the gateway uses.
package scalar

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/99designs/gqlgen/graphql"

	"paygraph/restclient"
)

// dateTimeLayout always renders three fractional digits and Z, as the
// contract requires (time.RFC3339Nano would drop trailing zeros).
const dateTimeLayout = "2006-01-02T15:04:05.000Z"

// MaxSafeInt is 2^53-1, the largest integer a JSON client can hold exactly.
const MaxSafeInt = 1<<53 - 1

// AppendDateTime appends t in the contract's DateTime form, years 0 to 9999
// by hand (every record has two) and others by AppendFormat, which
// FuzzAppendDateTime compares it with.
func AppendDateTime(b []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(b, dateTimeLayout)
	}
	hour, minute, sec := t.Clock()
	ms := t.Nanosecond() / 1e6 // .000 truncates, as AppendFormat does
	b = append(b, byte('0'+year/1000), byte('0'+year/100%10), byte('0'+year/10%10), byte('0'+year%10), '-')
	b = append(b, byte('0'+int(month)/10), byte('0'+int(month)%10), '-', byte('0'+day/10), byte('0'+day%10), 'T')
	b = append(b, byte('0'+hour/10), byte('0'+hour%10), ':', byte('0'+minute/10), byte('0'+minute%10), ':')
	b = append(b, byte('0'+sec/10), byte('0'+sec%10), '.', byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z')
	return b
}

// MarshalDateTime writes t as a quoted DateTime string.
func MarshalDateTime(t time.Time) graphql.Marshaler {
	return graphql.WriterFunc(func(w io.Writer) {
		var buf [32]byte
		b := append(buf[:0], '"')
		b = AppendDateTime(b, t)
		b = append(b, '"')
		_, _ = w.Write(b)
	})
}

// UnmarshalDateTime accepts an RFC 3339 string and normalises it to UTC.
func UnmarshalDateTime(v any) (time.Time, error) {
	s, ok := v.(string)
	if !ok {
		return time.Time{}, fmt.Errorf("DateTime must be a string like 2026-11-21T09:30:00.000Z, got %T", v)
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("DateTime must look like 2026-11-21T09:30:00.000Z: %q", s)
	}
	return t.UTC(), nil
}

// MarshalDecimal writes p as a quoted taka string with two fractional digits.
func MarshalDecimal(p restclient.Paisa) graphql.Marshaler {
	return graphql.WriterFunc(func(w io.Writer) {
		var buf [32]byte
		b := append(buf[:0], '"')
		b = p.AppendTaka(b)
		b = append(b, '"')
		_, _ = w.Write(b)
	})
}

// UnmarshalDecimal accepts only a string: a JSON number may already have
// been rounded by the client, which is exactly what Decimal exists to avoid.
func UnmarshalDecimal(v any) (restclient.Paisa, error) {
	s, ok := v.(string)
	if !ok {
		//lint:ignore ST1005 the message names the schema's scalar, a proper name, and reaches the caller as it is
		return 0, fmt.Errorf("Decimal must be a string like \"1250.00\", got %T", v)
	}
	p, err := restclient.ParseTaka(s)
	if err != nil {
		//lint:ignore ST1005 as above
		return 0, fmt.Errorf("Decimal %q is not an exact amount of taka with at most two fractional digits", s)
	}
	return p, nil
}

var errUnsafeInt = errors.New("SafeInt must be an integer between -(2^53-1) and 2^53-1")

// MarshalSafeInt writes n as a JSON number, or null out of the safe range
// (which the REST decoders already reject) rather than a wrong number.
func MarshalSafeInt(n int64) graphql.Marshaler {
	return graphql.WriterFunc(func(w io.Writer) {
		if n > MaxSafeInt || n < -MaxSafeInt {
			_, _ = io.WriteString(w, "null")
			return
		}
		var buf [24]byte
		_, _ = w.Write(strconv.AppendInt(buf[:0], n, 10))
	})
}

// UnmarshalSafeInt accepts integers within ±(2^53-1).
func UnmarshalSafeInt(v any) (int64, error) {
	var n int64
	var err error
	switch x := v.(type) {
	case int:
		n = int64(x)
	case int64:
		n = x
	case interface{ Int64() (int64, error) }: // json.Number
		n, err = x.Int64()
	case string:
		n, err = strconv.ParseInt(x, 10, 64)
	default:
		return 0, errUnsafeInt
	}
	if err != nil || n > MaxSafeInt || n < -MaxSafeInt {
		return 0, errUnsafeInt
	}
	return n, nil
}
