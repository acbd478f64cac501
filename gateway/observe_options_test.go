package gateway

import (
	"bytes"
	"net/url"
	"strings"
	"testing"
)

// TestObserveOptionsCarryTheOwnersShapes: observe knows no shape of its
// own; what the gateway hands it takes out API keys and secrets as
// restclient writes them and session tokens as sessiontoken does, and
// names REST calls by restclient's routes.
func TestObserveOptionsCarryTheOwnersShapes(t *testing.T) {
	t.Parallel()
	const (
		key    = "ak_test_Q3kz9LmN0pXy7Tu2Vw4Rs8Ab"
		secret = "sk_prod_R0d7Hj2Kp9Lm4Nq8St1Vx6Zb3Cf"
		token  = "v4.local.AbCdEf0123456789_-xYz"
	)
	var buf bytes.Buffer
	NewLogger(&buf, Config{LogFormat: "json"}).Info("upstream said "+secret, "detail", "Bearer "+token, "x-api-key", key)
	out := buf.String()
	for _, leaked := range []string{secret[8:], token[9:], key[8:]} {
		if strings.Contains(out, leaked) {
			t.Errorf("log line holds %q: %s", leaked, out)
		}
	}
	for _, want := range []string{"sk_…[redacted]", "v4.local.[redacted]", "ak_test_…"} {
		if !strings.Contains(out, want) {
			t.Errorf("log line lacks %q: %s", want, out)
		}
	}
	o := observeOptions()
	for _, tc := range []struct{ name, op, want string }{
		{"shaped like a key", "ak_test_Zz9Yy8", "other"},
		{"a plain name", "ListPayments", "ListPayments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := o.LogName(tc.op); got != tc.want {
				t.Errorf("LogName(%q) = %q, want %q", tc.op, got, tc.want)
			}
		})
	}
	u, _ := url.Parse("http://rest.example/base/api/v1/checkout/sessions/cs_1")
	if got := o.RouteOf(u); got != "/api/v1/checkout/sessions/{id}" {
		t.Errorf("RouteOf = %q", got)
	}
}
