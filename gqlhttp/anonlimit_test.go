package gqlhttp

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"paygraph/graph"
	"paygraph/ratelimit"
)

// TestAnonymousRateLimit: requests without a merchant share one budget;
// past it they are refused at once (429, RATE_LIMITED, retryAfter) while
// a merchant's requests and preflights are still served.
func TestAnonymousRateLimit(t *testing.T) {
	const rate, burst = 20, 40
	l, err := ratelimit.New(ratelimit.Config{RequestsPerSecond: rate, RequestsBurst: burst})
	if err != nil {
		t.Fatal(err)
	}
	var ran int
	var refused []string
	h := AnonymousRateLimit(l, merchantOf, func(_ context.Context, code string) { refused = append(refused, code) })(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { ran++ }))
	send := func(method, merchant string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, "/graphql", nil)
		if merchant != "" {
			req = req.WithContext(context.WithValue(req.Context(), merchantKey{}, merchant))
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}

	t.Run("anonymous requests beyond the budget get RATE_LIMITED", func(t *testing.T) {
		start := time.Now()
		admitted, sent := 0, 400
		var last *httptest.ResponseRecorder
		for range sent {
			rec := send(http.MethodPost, "")
			switch rec.Code {
			case http.StatusOK:
				admitted++
			case http.StatusTooManyRequests:
				last = rec
			default:
				t.Fatalf("status %d", rec.Code)
			}
		}
		elapsed := time.Since(start)
		if most := burst + int(float64(rate)*elapsed.Seconds()) + 1; admitted < burst || admitted > most {
			t.Fatalf("admitted %d of %d in %v, want %d..%d", admitted, sent, elapsed, burst, most)
		}
		t.Logf("anonymous: %d of %d requests admitted in %v (budget: burst %d + %d/s)", admitted, sent, elapsed.Round(time.Millisecond), burst, rate)
		if last == nil {
			t.Fatal("nothing refused")
		}
		var body struct {
			Errors []struct {
				Message    string
				Extensions struct {
					Code       string
					RetryAfter int
				}
			}
		}
		if err := json.Unmarshal(last.Body.Bytes(), &body); err != nil || len(body.Errors) != 1 {
			t.Fatalf("429 body %q: %v", last.Body.String(), err)
		}
		if e := body.Errors[0].Extensions; e.Code != graph.CodeRateLimited || e.RetryAfter < 1 {
			t.Errorf("extensions %+v, want RATE_LIMITED with retryAfter >= 1", e)
		}
		if last.Header().Get("Retry-After") == "" {
			t.Error("no Retry-After header")
		}
		if len(refused) != sent-admitted {
			t.Errorf("onRefused told %d times, want %d", len(refused), sent-admitted)
		}
	})
	t.Run("a merchant with credentials is still served", func(t *testing.T) {
		before := ran
		for range 100 {
			if rec := send(http.MethodPost, "merchant-a"); rec.Code != http.StatusOK {
				t.Fatalf("merchant refused: %d %s", rec.Code, rec.Body)
			}
		}
		if ran-before != 100 {
			t.Fatalf("handler ran %d times, want 100", ran-before)
		}
	})
	t.Run("preflights are not charged", func(t *testing.T) {
		if rec := send(http.MethodOptions, ""); rec.Code != http.StatusOK {
			t.Fatalf("preflight refused: %d", rec.Code)
		}
	})
	t.Run("a nil limiter charges nothing", func(t *testing.T) {
		n := 0
		h := AnonymousRateLimit(nil, merchantOf, nil)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { n++ }))
		for range 2 * burst {
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/graphql", nil))
		}
		if n != 2*burst {
			t.Fatalf("served %d of %d", n, 2*burst)
		}
	})
}
