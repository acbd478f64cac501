package restclient

import (
	"testing"
	"time"
)

// TestRedactCredentials: the one place that knows what a key and a
// secret look like rewrites them wherever they stand in a text.
func TestRedactCredentials(t *testing.T) {
	t.Parallel()
	const key, secret = "ak_test_Q3kz9LmN0pXy7Tu2Vw4Rs8Ab", "sk_test_R0d7Hj2Kp9Lm4Nq8St1Vx6Zb3Cf5Gh0Jk"
	for _, tc := range []struct{ name, in, want string }{
		{"a secret", "secret " + secret + " end", "secret sk_…[redacted] end"},
		{"a key", "key " + key, "key ak_test_…"},
		{"both, production", "ak_prod_ABC123,sk_prod_XYZ789", "ak_prod_…,sk_…[redacted]"},
		{"in a query string", "x-api-secret=sk_test_a&x-api-key=ak_live_b", "x-api-secret=sk_…[redacted]&x-api-key=ak_live_…"},
		{"prefixes alone", "nothing here: sk_ ak_test_ task_test_", "nothing here: sk_ ak_test_ task_test_"},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := RedactCredentials(tc.in); got != tc.want {
				t.Errorf("RedactCredentials(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestRedactKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, in, want string }{
		{"a test key", "ak_test_Q3kz9LmN0pXy7Tu2Vw4Rs8Ab", "ak_test_…"},
		{"empty", "", "[none]"},
		{"no prefix", "no-prefix-key", "[redacted]"},
		{"the prefix alone", "ak_test_", "[redacted]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := RedactKey(tc.in); got != tc.want {
				t.Errorf("RedactKey(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestCircuitStateIsTheGaugeValue: the gauge reads BreakerState as a
// number, so the numbers are the documented ones (docs/operations.md: 0 closed, 1
// half-open, 2 open), and the names are those of the log lines.
func TestCircuitStateIsTheGaugeValue(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		s    CircuitState
		n    float64
		name string
	}{{CircuitClosed, 0, "closed"}, {CircuitHalfOpen, 1, "half-open"}, {CircuitOpen, 2, "open"}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if float64(tc.s) != tc.n || tc.s.String() != tc.name {
				t.Errorf("%d %q, want %v %q", tc.s, tc.s, tc.n, tc.name)
			}
		})
	}
	c := newClient(t, Config{BaseURL: "http://" + closedAddr(t), Resilience: Resilience{
		BreakerFailures: 1, BreakerCooldown: time.Hour}})
	_, _ = c.GetPayment(credCtx(), "pay_x") // nothing listens: systemic, opens at once
	if s := c.BreakerState(); s != CircuitOpen {
		t.Errorf("state %v after a systemic failure with a threshold of 1", s)
	}
}
