package scalar

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql"

	"paygraph/restclient"
)

func render(m graphql.Marshaler) string {
	var b bytes.Buffer
	m.MarshalGQL(&b)
	return b.String()
}

func TestDateTimeAlwaysHasMilliseconds(t *testing.T) {
	t.Parallel()
	dhaka := time.FixedZone("BDT", 6*3600)
	for _, tc := range []struct {
		in   time.Time
		want string
	}{
		{time.Date(2026, 11, 21, 9, 30, 0, 0, time.UTC), `"2026-11-21T09:30:00.000Z"`},
		{time.Date(2026, 11, 21, 9, 30, 0, 120_000_000, time.UTC), `"2026-11-21T09:30:00.120Z"`},
		{time.Date(2026, 11, 21, 9, 30, 0, 999_999_999, time.UTC), `"2026-11-21T09:30:00.999Z"`},
		{time.Date(2026, 11, 21, 15, 30, 0, 5_000_000, dhaka), `"2026-11-21T09:30:00.005Z"`},
		{time.Date(1999, 1, 1, 0, 0, 0, 0, time.UTC), `"1999-01-01T00:00:00.000Z"`},
	} {
		if got := render(MarshalDateTime(tc.in)); got != tc.want {
			t.Errorf("MarshalDateTime(%v) = %s, want %s", tc.in, got, tc.want)
		}
	}
	got, err := UnmarshalDateTime("2026-11-21T15:30:00.5+06:00")
	if err != nil || !got.Equal(time.Date(2026, 11, 21, 9, 30, 0, 500_000_000, time.UTC)) || got.Location() != time.UTC {
		t.Errorf("UnmarshalDateTime = %v, %v", got, err)
	}
	for _, bad := range []any{"yesterday", 12, nil, "2026-11-21"} {
		if _, err := UnmarshalDateTime(bad); err == nil {
			t.Errorf("UnmarshalDateTime(%v) accepted", bad)
		}
	}
}

func TestDecimal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		paisa restclient.Paisa
		want  string
	}{
		{0, `"0.00"`}, {1, `"0.01"`}, {29, `"0.29"`}, {1999, `"19.99"`}, {10010, `"100.10"`},
		{125000, `"1250.00"`}, {-50, `"-0.50"`}, {9007199254740991, `"90071992547409.91"`},
	} {
		if got := render(MarshalDecimal(tc.paisa)); got != tc.want {
			t.Errorf("MarshalDecimal(%d) = %s, want %s", tc.paisa, got, tc.want)
		}
		var s string
		_ = json.Unmarshal([]byte(tc.want), &s)
		if p, err := UnmarshalDecimal(s); err != nil || p != tc.paisa {
			t.Errorf("UnmarshalDecimal(%q) = %d, %v", s, p, err)
		}
	}
	for _, bad := range []any{19.99, 1999, "1.999", "abc", nil} {
		if _, err := UnmarshalDecimal(bad); err == nil {
			t.Errorf("UnmarshalDecimal(%v) accepted", bad)
		}
	}
}

func TestSafeInt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n    int64
		want string
	}{{0, "0"}, {-1, "-1"}, {MaxSafeInt, "9007199254740991"}, {-MaxSafeInt, "-9007199254740991"}} {
		if got := render(MarshalSafeInt(tc.n)); got != tc.want {
			t.Errorf("MarshalSafeInt(%d) = %s", tc.n, got)
		}
	}
	for _, ok := range []any{int64(5), 5, json.Number("9007199254740991"), "12"} {
		if _, err := UnmarshalSafeInt(ok); err != nil {
			t.Errorf("UnmarshalSafeInt(%v): %v", ok, err)
		}
	}
	for _, bad := range []any{json.Number("9007199254740992"), int64(-MaxSafeInt - 1), 1.5, "x", nil} {
		if _, err := UnmarshalSafeInt(bad); err == nil {
			t.Errorf("UnmarshalSafeInt(%v) accepted", bad)
		}
	}
}
