package gqlhttp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"paygraph/gqlhttp"
	"paygraph/restclient"
)

// TestDeadline: the handler's context ends by the deadline (none without
// one), and the caller's context is left as it was.
func TestDeadline(t *testing.T) {
	for _, tc := range []struct {
		name    string
		timeout time.Duration
	}{
		{"one minute", time.Minute},
		{"none", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var deadline time.Time
			var has bool
			h := gqlhttp.Deadline(tc.timeout, 1)(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				deadline, has = r.Context().Deadline()
			}))
			req := httptest.NewRequest(http.MethodPost, "/graphql", nil)
			before := time.Now()
			h.ServeHTTP(httptest.NewRecorder(), req)
			if has != (tc.timeout > 0) {
				t.Fatalf("deadline set: %v, want %v", has, tc.timeout > 0)
			}
			if has && deadline.After(before.Add(tc.timeout).Add(time.Second)) {
				t.Errorf("deadline %v after the timeout", deadline.Sub(before))
			}
			if _, ok := req.Context().Deadline(); ok {
				t.Error("the caller's context changed")
			}
		})
	}
}

// TestDeadlineBoundsRESTCalls: within one request, the REST client's
// limiter grants at most restCalls slots at once (the default when 0),
// counted by taking slots until one would have to wait: the context it
// waits with is already cancelled, so the first refusal ends the count.
func TestDeadlineBoundsRESTCalls(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name            string
		restCalls, want int
	}{
		{"two", 2, 2},
		{"one", 1, 1},
		{"default", 0, restclient.DefaultRequestLimit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			limiter := restclient.NewLimiter(restclient.LimiterConfig{MaxInFlight: 1000, MaxInFlightPerMerchant: 1000})
			held := 0
			h := gqlhttp.Deadline(0, tc.restCalls)(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				ctx := restclient.WithCredentials(r.Context(), restclient.Credentials{APIKey: "ak_test_1", APISecret: "sk_test_1"})
				cancelled, cancel := context.WithCancel(ctx)
				cancel()
				for held < 1000 {
					slot, err := limiter.Hold(cancelled)
					if err != nil {
						break
					}
					defer slot.Release()
					held++
				}
			}))
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/graphql", nil))
			if held != tc.want {
				t.Errorf("%d REST slots held at once, want %d", held, tc.want)
			}
		})
	}
}
