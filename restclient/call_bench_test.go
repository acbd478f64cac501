package restclient

// BenchmarkGetPaymentGatewayStub: one Client.GetPayment as the gateway
// makes it (its default retries and circuits, a request's slot limit, the
// request's 30 s deadline: so a timer of the call's own) over a stub
// transport that, as net/http's does, derives a cancelable context from
// the request's and waits on it: the REST client's share of a
// single-payment query, the transport's own work aside.

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"
)

// ctxStubRT is stubRT with net/http's context handling around it.
type ctxStubRT struct{ stubRT }

func (s *ctxStubRT) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	select {
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	default:
	}
	return s.stubRT.RoundTrip(r)
}

func BenchmarkGetPaymentGatewayStub(b *testing.B) {
	body := sandboxBody(b, "")
	c, err := New(Config{
		BaseURL:    "http://rest.invalid",
		HTTPClient: &http.Client{Transport: &ctxStubRT{stubRT{body: body}}},
		Resilience: Resilience{MaxRetries: 2, BreakerFailures: 5, BreakerCooldown: 5 * time.Second},
	})
	if err != nil {
		b.Fatal(err)
	}
	var rec struct{ ID string }
	if err := json.Unmarshal(body, &rec); err != nil {
		b.Fatal(err)
	}
	base := WithCredentials(context.Background(), Credentials{APIKey: "ak_test_x", APISecret: "sk_test_y"})
	b.ReportAllocs()
	for b.Loop() {
		ctx, cancel := context.WithTimeout(WithRequestLimit(base, DefaultRequestLimit), 30*time.Second)
		if _, err := c.GetPayment(ctx, rec.ID); err != nil { // the id the body holds
			b.Fatal(err)
		}
		cancel()
	}
}
