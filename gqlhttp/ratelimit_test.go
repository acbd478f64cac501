package gqlhttp

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"paygraph/graph/errcode"
	"slices"
	"testing"
	"time"

	"paygraph/ratelimit"
)

type merchantKey struct{}

func merchantOf(ctx context.Context) (string, bool) {
	m, _ := ctx.Value(merchantKey{}).(string)
	return m, m != ""
}

// served is what one request through RateLimit came to.
type served struct {
	status   int
	header   http.Header
	body     map[string]any
	ran      bool   // the handler behind it ran
	charged  string // the code of the REST-call charge's refusal, "" none
	noBudget bool   // the handler found no budget in the context
}

// serve sends one request through RateLimit to a handler that charges
// restCalls through the context's budget, as the complexity step does.
func serve(t *testing.T, l *ratelimit.Limiter, method, merchant string, restCalls int, refused *[]string) served {
	t.Helper()
	var s served
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.ran = true
		b := budgetFrom(r.Context())
		if b == nil {
			s.noBudget = true
		} else if err := ChargeRESTCalls(r.Context(), restCalls); err != nil {
			s.charged, _ = err.Extensions["code"].(string)
		}
		setRateLimitHeaders(w.Header(), r.Context()) // as the response writer does (exchange)
		w.WriteHeader(http.StatusOK)
	})
	// A request's refusal is recorded by its code, an operation's by its
	// budget and code.
	report := func(_ context.Context, r Refusal) {
		if r.Answered {
			*refused = append(*refused, r.Code)
		} else {
			*refused = append(*refused, "operation "+r.Budget+" "+r.Code)
		}
	}
	h := NewAdmission(AdmissionConfig{Merchants: l, Merchant: merchantOf, OnRefused: report}).Middleware(inner)
	req := httptest.NewRequest(method, "/graphql", nil)
	if merchant != "" {
		req = req.WithContext(context.WithValue(req.Context(), merchantKey{}, merchant))
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	s.status, s.header = rec.Code, rec.Header()
	if rec.Code == http.StatusTooManyRequests {
		if err := json.Unmarshal(rec.Body.Bytes(), &s.body); err != nil {
			t.Fatalf("a 429 whose body is not JSON: %q", rec.Body.String())
		}
	}
	return s
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	newLimiter := func(t *testing.T, cfg ratelimit.Config) *ratelimit.Limiter {
		l, err := ratelimit.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	t.Run("requests budget: refused at the edge, 429, handler not run", func(t *testing.T) {
		var refused []string
		l := newLimiter(t, ratelimit.Config{RequestsPerSecond: 1, RequestsBurst: 1})
		if s := serve(t, l, http.MethodPost, "m", 0, &refused); !s.ran || s.status != http.StatusOK {
			t.Fatalf("first request: %+v", s)
		}
		s := serve(t, l, http.MethodPost, "m", 0, &refused)
		if s.ran || s.status != http.StatusTooManyRequests {
			t.Fatalf("second request: ran %v, status %d", s.ran, s.status)
		}
		errs, _ := s.body["errors"].([]any)
		ext, _ := errs[0].(map[string]any)["extensions"].(map[string]any)
		if ext["code"] != errcode.RateLimited || ext["retryAfter"] != float64(1) {
			t.Fatalf("extensions %v", ext)
		}
		if s.header.Get("Retry-After") != "1" || s.header.Get("RateLimit") != `"requests";r=0;t=1` {
			t.Fatalf("headers %v", s.header)
		}
		if len(refused) != 1 || refused[0] != errcode.RateLimited {
			t.Fatalf("onRefused told %v", refused)
		}
	})
	t.Run("REST-call budget: the operation's charge is refused, the headers name it", func(t *testing.T) {
		var refused []string
		l := newLimiter(t, ratelimit.Config{RequestsPerSecond: 100, RequestsBurst: 100, RESTCallsPerSecond: 1, RESTBurst: 3})
		first := serve(t, l, http.MethodPost, "m", 3, &refused)
		if first.charged != "" || first.header.Get("RateLimit") != `"rest-calls";r=0;t=3` {
			t.Fatalf("first: %+v", first)
		}
		s := serve(t, l, http.MethodPost, "m", 2, &refused)
		if s.charged != errcode.RateLimited || s.header.Get("Retry-After") != "2" || s.header.Get("RateLimit") != `"rest-calls";r=0;t=2` {
			t.Fatalf("second: %+v", s)
		}
		if other := serve(t, l, http.MethodPost, "other", 3, &refused); other.charged != "" {
			t.Fatalf("another merchant refused: %+v", other)
		}
		// The operation's refusal is the GraphQL server's to count, not
		// the edge's: reported with its budget, never answered.
		if want := []string{"operation merchant_rest_calls RATE_LIMITED"}; !slices.Equal(refused, want) {
			t.Fatalf("refusals reported %v, want %v", refused, want)
		}
	})
	t.Run("more than the burst: the complexity code, no retryAfter", func(t *testing.T) {
		var refused []string
		l := newLimiter(t, ratelimit.Config{RESTCallsPerSecond: 1, RESTBurst: 3})
		if s := serve(t, l, http.MethodPost, "m", 4, &refused); s.charged != errcode.ComplexityLimit || s.header.Get("Retry-After") != "" {
			t.Fatalf("%+v", s)
		}
		if want := []string{"operation merchant_rest_calls COMPLEXITY_LIMIT_EXCEEDED"}; !slices.Equal(refused, want) {
			t.Fatalf("refusals reported %v, want %v", refused, want)
		}
	})
	t.Run("not charged: no merchant, a preflight, no limiter", func(t *testing.T) {
		var refused []string
		l := newLimiter(t, ratelimit.Config{RequestsPerSecond: 1, RequestsBurst: 1})
		for _, tc := range []struct {
			name     string
			l        *ratelimit.Limiter
			method   string
			merchant string
		}{
			{"no merchant", l, http.MethodPost, ""},
			{"OPTIONS", l, http.MethodOptions, "m"},
			{"nil limiter", nil, http.MethodPost, "m"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				for range 3 {
					s := serve(t, tc.l, tc.method, tc.merchant, 1, &refused)
					if !s.ran || !s.noBudget || s.header.Get("RateLimit-Policy") != "" {
						t.Fatalf("%+v", s)
					}
				}
			})
		}
	})
}

func TestTighter(t *testing.T) {
	t.Parallel()
	req := ratelimit.Decision{Allowed: true, Policy: ratelimit.PolicyRequests, Limit: 400, Remaining: 100}
	for _, tt := range []struct {
		name string
		rest ratelimit.Decision
		want string
	}{
		{"REST calls refused", ratelimit.Decision{Policy: ratelimit.PolicyRESTCalls, Limit: 1000}, ratelimit.PolicyRESTCalls},
		{"REST calls charged nothing", ratelimit.Decision{Allowed: true}, ratelimit.PolicyRequests},
		{"REST calls have the smaller share left", ratelimit.Decision{Allowed: true, Policy: ratelimit.PolicyRESTCalls, Limit: 1000, Remaining: 200}, ratelimit.PolicyRESTCalls},
		{"requests have the smaller share left", ratelimit.Decision{Allowed: true, Policy: ratelimit.PolicyRESTCalls, Limit: 1000, Remaining: 300}, ratelimit.PolicyRequests},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := restTighter(req, tt.rest); got != (tt.want == tt.rest.Policy) {
				t.Fatalf("restTighter: %v, want the %q decision", got, tt.want)
			}
		})
	}
}

// TestSetHeadersAsTighter: after each operation's charge (a batch's
// entries one by one) the headers are what setting the tighter decision's
// after every charge made them, and they are not written again while the
// edge's decision, which RateLimit set, stays the tighter.
func TestSetHeadersAsTighter(t *testing.T) {
	edge := ratelimit.Decision{Allowed: true, Policy: ratelimit.PolicyRequests, Limit: 400, Remaining: 100}
	restTight := ratelimit.Decision{Allowed: true, Policy: ratelimit.PolicyRESTCalls, Limit: 1000, Remaining: 200}
	restLoose := ratelimit.Decision{Allowed: true, Policy: ratelimit.PolicyRESTCalls, Limit: 1000, Remaining: 300}
	refused := ratelimit.Decision{Policy: ratelimit.PolicyRESTCalls, Limit: 1000, RetryAfter: 2 * time.Second}
	h, want := http.Header{}, http.Header{}
	edge.SetHeaders(h) // RateLimit's, at the edge
	edge.SetHeaders(want)
	b := &restCallBudget{edge: edge}
	b.setHeaders(h) // nothing charged yet
	for i, rest := range []ratelimit.Decision{restLoose, restTight, restLoose, restLoose, refused, restLoose} {
		before := h.Values("RateLimit")
		b.rest, b.charged = rest, true
		b.setHeaders(h)
		if restTighter(edge, rest) { // as every charge wrote them before
			rest.SetHeaders(want)
		} else {
			edge.SetHeaders(want)
		}
		if !maps.EqualFunc(h, want, slices.Equal) {
			t.Errorf("charge %d: headers %q, want %q", i, h, want)
		}
		if i == 0 && &h.Values("RateLimit")[0] != &before[0] {
			t.Errorf("charge %d: the edge's headers written again", i)
		}
	}
}
