package restclient

import (
	"errors"
	"math"
	"math/big"
	"strings"
	"testing"
)

func TestParseTaka(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    Paisa
		wantErr error // nil: success
	}{
		{"19.99", 1999, nil},
		{"0.29", 29, nil},
		{"1.15", 115, nil}, // 1.15*100 = 114.99999999999999 as float64
		{"4.35", 435, nil}, // 434.99999999999994 as float64
		{"8.2", 820, nil},  // 819.9999999999999 as float64
		{"0.57", 57, nil},  // 56.99999999999999 as float64
		{"100.1", 10010, nil},
		{"1250", 125000, nil},
		{"-5.5", -550, nil},
		{"19.990", 1999, nil},
		{"19.99000000000000000000000000", 1999, nil},
		{"0.1", 10, nil},
		{"0.10", 10, nil},
		{"0.05", 5, nil},
		{"0", 0, nil},
		{"-0", 0, nil},
		{"-0.00", 0, nil},
		{"0.000", 0, nil},
		{"-0.01", -1, nil},
		{"999999999999.99", 99999999999999, nil},
		{"90071992547409.91", 9007199254740991, nil},   // exactly 2^53-1 paisa
		{"-90071992547409.91", -9007199254740991, nil}, // exactly -(2^53-1)
		{"1e2", 10000, nil},
		{"1E2", 10000, nil},
		{"1.5E+1", 1500, nil},
		{"1999e-2", 1999, nil},
		{"19990e-3", 1999, nil},
		{"0.01e2", 100, nil},
		{"0e999999999999999999999", 0, nil},
		{"000000000000000000000000000000019.99", 1999, nil},
		{"00.5", 50, nil}, // leading zeros tolerated (documented choice)
		{"007", 700, nil},
		{"100000000000000000000000000000e-30", 10, nil}, // 1e29 * 1e-30 taka,

		{"1.999", 0, ErrAmountPrecision},
		{"1.005", 0, ErrAmountPrecision},
		{"0.001", 0, ErrAmountPrecision},
		{"1e-3", 0, ErrAmountPrecision},
		{"1999e-3", 0, ErrAmountPrecision},
		{"1.0000000000000000000000000001", 0, ErrAmountPrecision},
		{"1.2345678901234567890123", 0, ErrAmountPrecision},
		{"90071992547409.92", 0, ErrAmountRange},
		{"-90071992547409.92", 0, ErrAmountRange},
		{"100000000000000", 0, ErrAmountRange},
		{"123456789012345678901234567890", 0, ErrAmountRange},
		{"1e14", 0, ErrAmountRange},
		{"1e999999999999999999", 0, ErrAmountRange},
		{"1e-999999999999999999", 0, ErrAmountPrecision},

		{"", 0, ErrAmountSyntax},
		{"abc", 0, ErrAmountSyntax},
		{"1.2.3", 0, ErrAmountSyntax},
		{"NaN", 0, ErrAmountSyntax},
		{"Inf", 0, ErrAmountSyntax},
		{"-Inf", 0, ErrAmountSyntax},
		{" 1", 0, ErrAmountSyntax},
		{"1 ", 0, ErrAmountSyntax},
		{"+1", 0, ErrAmountSyntax},
		{"-", 0, ErrAmountSyntax},
		{"--1", 0, ErrAmountSyntax},
		{".5", 0, ErrAmountSyntax},
		{"5.", 0, ErrAmountSyntax},
		{"1e", 0, ErrAmountSyntax},
		{"1e+", 0, ErrAmountSyntax},
		{"1e2.5", 0, ErrAmountSyntax},
		{"0x10", 0, ErrAmountSyntax},
		{"1_000", 0, ErrAmountSyntax},
		{"1,5", 0, ErrAmountSyntax},
		{"1/2", 0, ErrAmountSyntax},
		{"١٢", 0, ErrAmountSyntax}, // non-ASCII digits
		{"\"1\"", 0, ErrAmountSyntax},
	}
	for _, tt := range tests {
		got, err := ParseTaka(tt.in)
		if tt.wantErr != nil {
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("ParseTaka(%q) = %v, %v; want error %v", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseTaka(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
			continue
		}
		// Cross-check with exact rational arithmetic (never a float).
		if !strings.ContainsAny(tt.in, "eE") {
			if want, ok := ratPaisa(tt.in); !ok || want != got {
				t.Errorf("ParseTaka(%q) = %d; big.Rat says %d (ok=%v)", tt.in, got, want, ok)
			}
		}
	}
}

// TestParseTakaNoFloat checks every cent value in a range whose float64
// products are known to round badly: an implementation that went through
// float64 (f*100 truncated) fails several of them.
func TestParseTakaNoFloat(t *testing.T) {
	t.Parallel()
	for whole := int64(0); whole < 50; whole++ {
		for cents := int64(0); cents < 100; cents++ {
			s := Paisa(whole*100 + cents).String()
			got, err := ParseTaka(s)
			if err != nil || int64(got) != whole*100+cents {
				t.Fatalf("ParseTaka(%q) = %d, %v", s, got, err)
			}
		}
	}
}

func ratPaisa(s string) (Paisa, bool) {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return 0, false
	}
	r.Mul(r, big.NewRat(100, 1))
	if !r.IsInt() || !r.Num().IsInt64() {
		return 0, false
	}
	return Paisa(r.Num().Int64()), true
}

func TestParseExactInt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1999", 1999, true},
		{"-1", -1, true},
		{"1999.0", 1999, true},
		{"1.999e3", 1999, true},
		{"9007199254740991", 9007199254740991, true},
		{"9007199254740992", 0, false},
		{"1999.5", 0, false},
		{"1e-1", 0, false},
		{"", 0, false},
		{"x", 0, false},
	}
	for _, tt := range tests {
		got, err := parseExactInt(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseExactInt(%q) = %d, %v; want %d ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestPaisaString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   Paisa
		want string
	}{
		{125000, "1250.00"},
		{5, "0.05"},
		{0, "0.00"},
		{-50, "-0.50"},
		{-1234, "-12.34"},
		{-1, "-0.01"},
		{1999, "19.99"},
		{10, "0.10"},
		{MaxSafePaisa, "90071992547409.91"},
		{-MaxSafePaisa, "-90071992547409.91"},
		{math.MaxInt64, "92233720368547758.07"},
		{math.MinInt64, "-92233720368547758.08"},
	}
	for _, tt := range tests {
		if got := tt.in.String(); got != tt.want {
			t.Errorf("Paisa(%d).String() = %q; want %q", int64(tt.in), got, tt.want)
		}
		if got := string(tt.in.AppendTaka([]byte("x="))); got != "x="+tt.want {
			t.Errorf("Paisa(%d).AppendTaka = %q; want %q", int64(tt.in), got, "x="+tt.want)
		}
	}
}

func TestPaisaAllocations(t *testing.T) {
	buf := make([]byte, 0, 32)
	p := Paisa(123456)
	if n := testing.AllocsPerRun(100, func() { buf = p.AppendTaka(buf[:0]) }); n != 0 {
		t.Errorf("AppendTaka allocates %v times; want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = ParseTaka("19.99") }); n != 0 {
		t.Errorf("ParseTaka allocates %v times on success; want 0", n)
	}
}

func FuzzParseTaka(f *testing.F) {
	for _, s := range []string{"19.99", "0.29", "100.1", "1250", "-5.5", "19.990", "1.999", "1e2",
		"1.5E+1", "", "abc", "1.2.3", "NaN", " 1", "90071992547409.91", "90071992547409.92", "-0", "0e99999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseTaka(s)
		if err != nil {
			if p != 0 {
				t.Fatalf("ParseTaka(%q) returned %d with error %v", s, p, err)
			}
			return
		}
		if p > MaxSafePaisa || p < -MaxSafePaisa {
			t.Fatalf("ParseTaka(%q) = %d out of range", s, p)
		}
		back, err := ParseTaka(p.String())
		if err != nil || back != p {
			t.Fatalf("ParseTaka(%q) = %d; String %q re-parses to %d, %v", s, p, p.String(), back, err)
		}
		if !strings.ContainsAny(s, "eE") && len(s) < 400 {
			if want, ok := ratPaisa(s); !ok || want != p {
				t.Fatalf("ParseTaka(%q) = %d; big.Rat says %d (ok=%v)", s, p, want, ok)
			}
		}
	})
}
