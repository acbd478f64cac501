package restclient

// parseUTC, the fast path of parseTime, against time.Parse: whenever it
// answers, it answers what time.Parse(time.RFC3339, s).UTC() does.

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

var timeSeeds = []string{
	"2026-10-31T21:32:54.000Z", "2026-10-31T21:32:54Z", "2026-10-31T21:34:58.604Z", "2024-02-29T00:00:00Z",
	"2023-02-29T00:00:00Z", "2100-02-29T00:00:00Z", "2000-02-29T23:59:59.999999999Z", "0000-01-01T00:00:00Z",
	"9999-12-31T23:59:59Z", "2026-04-31T00:00:00Z", "2026-13-01T00:00:00Z", "2026-00-01T00:00:00Z",
	"2026-01-00T00:00:00Z", "2026-01-01T24:00:00Z", "2026-01-01T23:60:00Z", "2026-01-01T23:59:60Z",
	"2026-01-01T00:00:00.Z", "2026-01-01T00:00:00.1Z", "2026-01-01T00:00:00.1234567890Z",
	"2026-01-01T00:00:00,5Z", "2026-01-01T00:00:00z", "2026-01-01t00:00:00Z", "2026-01-01T00:00:00+06:00",
	"2026-01-01T00:00:00.5+0600", "2026-1-01T00:00:00Z", "+026-01-01T00:00:00Z", "2026-01-01T00:00:0aZ",
	"2026-01-01T00:00:00.-1Z", "2026-01-01 00:00:00Z", "", "Z",
}

func checkParseUTC(t *testing.T, s string) {
	t.Helper()
	got, ok := parseUTC(s)
	want, err := time.Parse(time.RFC3339, s)
	switch {
	case ok && err != nil:
		t.Errorf("parseUTC(%q) = %v, time.Parse refuses it: %v", s, got, err)
	case ok && (got != want.UTC() || !got.Equal(want)):
		t.Errorf("parseUTC(%q) = %v, time.Parse %v", s, got, want.UTC())
	}
}

func TestParseUTCSameAsTimeParse(t *testing.T) {
	t.Parallel()
	for _, s := range timeSeeds {
		t.Run(s, func(t *testing.T) {
			t.Parallel()
			checkParseUTC(t, s)
		})
	}
	// Near the edges of every field, with fractions of 0 to 11 digits.
	rnd := rand.New(rand.NewPCG(25, 2026))
	for range 20000 {
		s := fmt.Sprintf("%04d-%02d-%02dT%02d:%02d:%02d", rnd.IntN(10000), rnd.IntN(14), rnd.IntN(33), rnd.IntN(26), rnd.IntN(62), rnd.IntN(62))
		if n := rnd.IntN(12); n > 0 {
			var b strings.Builder
			for range n - 1 {
				b.WriteByte(byte('0' + rnd.IntN(10)))
			}
			s += "." + b.String()
		}
		checkParseUTC(t, s+"Z")
	}
	// The usual shape is taken by the fast path.
	for _, s := range []string{"2026-10-31T21:32:54.000Z", "2026-10-31T21:32:54Z", "2024-02-29T00:00:00.123456789Z"} {
		if _, ok := parseUTC(s); !ok {
			t.Errorf("parseUTC(%q) declined the usual shape", s)
		}
	}
}

func FuzzParseUTC(f *testing.F) {
	for _, s := range timeSeeds {
		f.Add(s)
	}
	f.Fuzz(checkParseUTC)
}
