package restclient

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

// ratPaisaBounded is ratPaisa for texts whose exponent (if any) is small
// enough for big.Rat to expand quickly; ok is false otherwise.
func ratPaisaBounded(s string) (Paisa, bool) {
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
		if err != nil || e > 400 || e < -400 {
			return 0, false
		}
	}
	return ratPaisa(s)
}

// decodeForTest decodes body the way Client.do does.
func decodeForTest(body []byte, into any) error {
	return decodeBody(&limitedReader{r: bytes.NewReader(body), n: DefaultMaxPageBytes}, into, -1, nil)
}

func FuzzDecodePayment(f *testing.F) {
	f.Add([]byte(paymentBody))
	f.Add([]byte(`{"id":"p","status":"FAILED","amount":1.999,"created_at":"2026-11-21T09:30:00Z","updated_at":"2026-11-21T09:30:00Z"}`))
	f.Add([]byte(`{"id":"p","status":"PENDING","amount":"1e2","created_at":"2026-11-21T09:30:00+06:00","updated_at":"2026-11-21T09:30:00.123456789Z"}`))
	f.Add([]byte(`{"id":"p","status":"PENDING","amount":90071992547409.92,"created_at":"x","updated_at":"y"}`))
	f.Add([]byte(`{"error":"Payment not found"}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"customer":{"name":null,"address":7}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var w wirePayment
		if err := decodeForTest(body, &w); err != nil {
			return
		}
		if _, isErr := w.errorBody(); isErr {
			return
		}
		var p Payment
		if err := w.to(&p, true); err != nil {
			return
		}
		// Success implies an exact amount: compare with big.Rat on the raw text.
		want, ok := ratPaisaBounded(string(w.Amount))
		if ok && want != p.Amount {
			t.Fatalf("amount %q decoded to %d; exact value %d (ok=%v)", w.Amount, p.Amount, want, ok)
		}
		if back, err := ParseTaka(p.Amount.String()); err != nil || back != p.Amount {
			t.Fatalf("amount %d does not round-trip: %v", p.Amount, err)
		}
		if p.ID == "" || p.CreatedAt.IsZero() && w.CreatedAt == "" {
			t.Fatalf("required fields missing on success: %+v", p)
		}
		if p.CreatedAt.Location().String() != "UTC" || p.UpdatedAt.Location().String() != "UTC" {
			t.Fatalf("timestamps not in UTC: %v %v", p.CreatedAt, p.UpdatedAt)
		}
	})
}

func FuzzDecodeCheckoutSession(f *testing.F) {
	f.Add([]byte(sessionBody))
	f.Add([]byte(`{"data":{"id":"s","amount":"19.99","amount_paisa":1998,"subtotal_paisa":1,"created_at":"2026-11-21T09:30:00Z","updated_at":"2026-11-21T09:30:00Z"}}`))
	f.Add([]byte(`{"data":{"id":"s","amount_paisa":1e3,"subtotal":"0.1","meta_data":{"b":"1","a":"2"},"created_at":"2026-11-21T09:30:00Z","updated_at":"2026-11-21T09:30:00Z"}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var w wireSessionEnvelope
		if err := decodeForTest(body, &w); err != nil {
			return
		}
		s, err := w.toSession()
		if err != nil {
			return
		}
		if s.Metadata == nil {
			t.Fatal("nil metadata on success")
		}
		for i := 1; i < len(s.Metadata); i++ {
			if s.Metadata[i-1].Key >= s.Metadata[i].Key {
				t.Fatalf("metadata not sorted: %v", s.Metadata)
			}
		}
		for _, v := range []Paisa{s.Amount, s.Subtotal} {
			if v > MaxSafePaisa || v < -MaxSafePaisa {
				t.Fatalf("amount out of range: %d", v)
			}
		}
	})
}
