package gateway_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"paygraph/internal/gqltest"
)

// TestRateLimitRESTCalls: a merchant's burst of REST calls is spent, the
// next operation is refused with RATE_LIMITED before any of its REST calls
// (the sandbox counts them), with a retryAfter that is the real wait and
// the RateLimit headers; another merchant is unaffected.
func TestRateLimitRESTCalls(t *testing.T) {
	g := startGateway(t, setup{env: map[string]string{
		"RATE_LIMIT_REST_CALLS_PER_SECOND": "1", "Config.RateLimitRESTBurst": "5", "MAX_COMPLEXITY": "5",
		"RATE_LIMIT_REQUESTS_PER_SECOND": "0",
	}})
	c := gqltest.Client{URL: g.URL, Forbidden: []string{g.Biz[0].APISecret, g.Biz[1].APISecret}}
	a, b := gqltest.Headers(g.Biz[0].APIKey, g.Biz[0].APISecret), gqltest.Headers(g.Biz[1].APIKey, g.Biz[1].APISecret)
	// 1 list page + 4 payment details (the list omits the address): 5 REST calls.
	const five = `{ payments(first: 4) { nodes { id customer { address } } } }`

	first := c.Post(t, a, five, nil).WantNoErrors(t)
	if got := g.Sandbox.CallCount(""); got != 5 {
		t.Fatalf("the first operation made %d REST calls, want 5", got)
	}
	wantHeader(t, first.Header, "RateLimit", `"rest-calls";r=0;t=5`)
	wantHeader(t, first.Header, "RateLimit-Policy", `"rest-calls";q=5;w=5;paygraph-unit="rest-calls"`)

	for _, tc := range []struct {
		name  string
		query string
		wait  int // the seconds the REST-call budget needs: cost / rate
	}{
		{"five more REST calls", five, 5},
		{"one more REST call", `{ payment(id: "` + g.Sandbox.Payments(g.Biz[0].APIKey)[0].ID + `") { id } }`, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g.Sandbox.ResetCalls()
			r := c.Post(t, a, tc.query, nil)
			e := r.WantCode(t, "RATE_LIMITED")
			if r.Data != nil && string(r.Data) != "null" {
				t.Fatalf("a refused operation has data: %s", r.Data)
			}
			if n := g.Sandbox.CallCount(""); n != 0 {
				t.Fatalf("a refused operation made %d REST calls", n)
			}
			// The budget refills one call a second, and a few ms have passed
			// since it was spent: the wait is just under tc.wait seconds,
			// rounded up.
			retry, _ := e.Extensions["retryAfter"].(float64)
			if int(retry) != tc.wait && int(retry) != tc.wait-1 {
				t.Fatalf("retryAfter %v, want %d (or %d on a slow machine)", e.Extensions["retryAfter"], tc.wait, tc.wait-1)
			}
			wantHeader(t, r.Header, "Retry-After", strconv.Itoa(int(retry)))
			wantHeader(t, r.Header, "RateLimit", `"rest-calls";r=0;t=`+strconv.Itoa(int(retry)))
			wantHeader(t, r.Header, "RateLimit-Policy", `"rest-calls";q=5;w=5;paygraph-unit="rest-calls"`)
		})
	}

	t.Run("another merchant is unaffected", func(t *testing.T) {
		r := c.Post(t, b, five, nil).WantNoErrors(t)
		if r.Header.Get("Retry-After") != "" {
			t.Fatalf("B got a Retry-After: %v", r.Header)
		}
	})
	t.Run("introspection costs no REST call and is not refused", func(t *testing.T) {
		c.Post(t, a, `{ __typename }`, nil).WantNoErrors(t)
	})
	t.Run("the refusals are counted by outcome", func(t *testing.T) {
		m := c.Do(t, http.MethodGet, "/metrics", nil, nil)
		if !strings.Contains(string(m.Raw), `paygraph_rate_limit_decisions_total{outcome="limited"} 2`) {
			t.Fatalf("no count of the 2 refusals in /metrics:\n%s", linesWith(string(m.Raw), "paygraph_rate_limit"))
		}
	})
}

// TestRateLimitRequests: the requests budget is charged at the edge, before
// the body is read: a refusal is HTTP 429, RATE_LIMITED with retryAfter,
// whatever the request (introspection included); a request without
// credentials is not charged (it can make no REST call).
func TestRateLimitRequests(t *testing.T) {
	g := startGateway(t, setup{env: map[string]string{
		"RATE_LIMIT_REQUESTS_PER_SECOND": "1", "Config.RateLimitRequestsBurst": "2",
		"RATE_LIMIT_REST_CALLS_PER_SECOND": "0",
	}})
	c := gqltest.Client{URL: g.URL, Forbidden: []string{g.Biz[0].APISecret}}
	a := gqltest.Headers(g.Biz[0].APIKey, g.Biz[0].APISecret)
	q := `{ payment(id: "` + g.Sandbox.Payments(g.Biz[0].APIKey)[0].ID + `") { id } }`

	c.Post(t, a, q, nil).WantNoErrors(t)
	second := c.Post(t, a, `{ __typename }`, nil).WantNoErrors(t)
	wantHeader(t, second.Header, "RateLimit", `"requests";r=0;t=2`)
	wantHeader(t, second.Header, "RateLimit-Policy", `"requests";q=2;w=2`)
	for _, tc := range []struct {
		name string
		send func() *gqltest.Response
	}{
		{"POST", func() *gqltest.Response { return c.Post(t, a, q, nil) }},
		{"GET", func() *gqltest.Response { return c.Get(t, a, q, nil) }},
		{"a body that is not JSON", func() *gqltest.Response {
			return c.Send(t, http.MethodPost, "/graphql", withJSON(a), []byte("not json"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.send()
			if r.Status != http.StatusTooManyRequests {
				t.Fatalf("status %d, want 429", r.Status)
			}
			e := r.WantCode(t, "RATE_LIMITED")
			if e.Extensions["retryAfter"] != float64(1) {
				t.Fatalf("retryAfter %v, want 1", e.Extensions["retryAfter"])
			}
			wantHeader(t, r.Header, "Retry-After", "1")
			wantHeader(t, r.Header, "RateLimit", `"requests";r=0;t=1`)
		})
	}
	if n := g.Sandbox.CallCount(""); n != 1 {
		t.Fatalf("%d REST calls, want 1 (the first request's only)", n)
	}
	t.Run("no credentials: not charged", func(t *testing.T) {
		for range 5 {
			r := c.Post(t, nil, `{ __typename }`, nil).WantNoErrors(t)
			if r.Header.Get("RateLimit") != "" {
				t.Fatalf("a request without credentials was charged: %v", r.Header)
			}
		}
	})
}

func wantHeader(t *testing.T, h http.Header, name, want string) {
	t.Helper()
	if got := h.Values(name); len(got) != 1 || got[0] != want {
		t.Fatalf("%s: %q, want %q", name, got, want)
	}
}

func withJSON(h http.Header) http.Header {
	h = h.Clone()
	h.Set("Content-Type", "application/json")
	return h
}

func linesWith(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
