package gqlhttp

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"paygraph/graph/errcode"
	"strings"
	"testing"
	"testing/synctest"
	"time"

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
	h := NewAdmission(AdmissionConfig{Anonymous: l, Merchant: merchantOf, OnRefused: func(_ context.Context, r Refusal) { refused = append(refused, r.Code) }}).Middleware(
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
		if e := body.Errors[0].Extensions; e.Code != errcode.RateLimited || e.RetryAfter < 1 {
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
		h := NewAdmission(AdmissionConfig{Merchant: merchantOf}).Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { n++ }))
		for range 2 * burst {
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/graphql", nil))
		}
		if n != 2*burst {
			t.Fatalf("served %d of %d", n, 2*burst)
		}
	})
}

// TestAnonymousAddressRateLimit: requests without a merchant are charged
// to their client address's budget before the shared one; an address past
// its budget is refused as the shared budget refuses (429, RATE_LIMITED,
// retryAfter, held by a RefusalDelay) without spending the shared budget.
func TestAnonymousAddressRateLimit(t *testing.T) {
	const burst = 3
	newLimiter := func(t *testing.T, rate, burst int) *ratelimit.Limiter {
		t.Helper()
		// One a minute: nothing refills while the test runs.
		l, err := ratelimit.New(ratelimit.Config{RequestsPerSecond: rate, RequestsBurst: burst})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	// chain is the admission step with the per-address and the shared
	// budget (and the refusal delay d, if any) over a handler that counts
	// what it serves.
	chain := func(perAddress, shared *ratelimit.Limiter, trusted []netip.Prefix, d *RefusalDelay, served *int, refused *[]string) http.Handler {
		onRefused := func(_ context.Context, r Refusal) { *refused = append(*refused, r.Code) }
		return NewAdmission(AdmissionConfig{AnonymousAddress: perAddress, Anonymous: shared, TrustedProxies: trusted,
			Merchant: merchantOf, Delay: d, OnRefused: onRefused}).Middleware(
			http.HandlerFunc(func(http.ResponseWriter, *http.Request) { *served++ }))
	}
	send := func(h http.Handler, remote, forwarded string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/graphql", nil)
		req.RemoteAddr = remote
		if forwarded != "" {
			req.Header.Set("X-Forwarded-For", forwarded)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	// admitted sends n requests and counts the 200s, failing on anything
	// but 200 and 429.
	admitted := func(t *testing.T, h http.Handler, n int, remote, forwarded string) int {
		t.Helper()
		ok := 0
		for range n {
			switch rec := send(h, remote, forwarded); rec.Code {
			case http.StatusOK:
				ok++
			case http.StatusTooManyRequests:
			default:
				t.Fatalf("status %d", rec.Code)
			}
		}
		return ok
	}

	t.Run("two addresses have separate budgets", func(t *testing.T) {
		var served int
		var refused []string
		h := chain(newLimiter(t, 1, burst), nil, nil, nil, &served, &refused)
		if got := admitted(t, h, 2*burst, "192.0.2.1:1000", ""); got != burst {
			t.Fatalf("first address: %d of %d admitted, want %d", got, 2*burst, burst)
		}
		if got := admitted(t, h, 2*burst, "192.0.2.2:1000", ""); got != burst {
			t.Fatalf("second address: %d of %d admitted, want %d (its own budget)", got, 2*burst, burst)
		}
		// Another port of the same host, and another host of the same
		// IPv6 /64, are the same address.
		if got := admitted(t, h, 1, "192.0.2.1:2000", ""); got != 0 {
			t.Fatal("another port of a spent address was admitted")
		}
		if got := admitted(t, h, burst, "[2001:db8:1:2::1]:1000", ""); got != burst {
			t.Fatalf("IPv6 host: %d admitted, want %d", got, burst)
		}
		if got := admitted(t, h, 1, "[2001:db8:1:2:ffff::9]:1000", ""); got != 0 {
			t.Fatal("another host of a spent /64 was admitted")
		}
		if got := admitted(t, h, 1, "[2001:db8:1:3::1]:1000", ""); got != 1 {
			t.Fatal("another /64 was refused")
		}
		if served != 3*burst+1 || len(refused) != 2*burst+2 {
			t.Fatalf("served %d, refused %d; want %d, %d", served, len(refused), 3*burst+1, 2*burst+2)
		}
	})
	t.Run("a WebSocket upgrade is not charged to its address", func(t *testing.T) {
		var served int
		var refused []string
		h := chain(newLimiter(t, 1, burst), nil, nil, nil, &served, &refused)
		if got := admitted(t, h, burst+1, "192.0.2.7:1000", ""); got != burst {
			t.Fatalf("%d of %d admitted, want %d", got, burst+1, burst)
		}
		for i := range 2 * burst {
			req := httptest.NewRequest(http.MethodGet, "/graphql", nil)
			req.RemoteAddr = "192.0.2.7:1000"
			req.Header.Set("Upgrade", "websocket")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				t.Fatalf("upgrade %d from a spent address: status %d, want it passed on", i, rec.Code)
			}
		}
	})
	t.Run("a per-address refusal does not spend the shared budget", func(t *testing.T) {
		var served int
		var refused []string
		// The shared budget admits burst+1 at once: the first address's
		// burst, then one more from anyone.
		shared := newLimiter(t, 1, burst+1)
		h := chain(newLimiter(t, 1, burst), shared, nil, nil, &served, &refused)
		if got := admitted(t, h, 100, "192.0.2.1:1000", ""); got != burst {
			t.Fatalf("flooding address: %d of 100 admitted, want %d", got, burst)
		}
		// Had its 97 refusals been charged to the shared budget, this
		// address would be refused.
		if got := admitted(t, h, 1, "192.0.2.2:1000", ""); got != 1 {
			t.Fatal("another address was refused: the per-address refusals spent the shared budget")
		}
		// And the shared budget still binds behind it.
		if got := admitted(t, h, 1, "192.0.2.3:1000", ""); got != 0 {
			t.Fatal("the shared budget, spent, admitted another address")
		}
		rec := send(h, "192.0.2.1:1000", "")
		var body struct {
			Errors []struct {
				Message    string
				Extensions struct {
					Code       string
					RetryAfter int
				}
			}
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || len(body.Errors) != 1 {
			t.Fatalf("429 body %q: %v", rec.Body.String(), err)
		}
		if e := body.Errors[0].Extensions; rec.Code != http.StatusTooManyRequests || e.Code != errcode.RateLimited || e.RetryAfter < 1 || rec.Header().Get("Retry-After") == "" {
			t.Fatalf("refusal %d %+v, Retry-After %q: want 429 RATE_LIMITED with retryAfter", rec.Code, e, rec.Header().Get("Retry-After"))
		}
		if strings.Contains(rec.Body.String(), "192.0.2.1") {
			t.Fatalf("the refusal names the address: %s", rec.Body)
		}
	})
	t.Run("a per-address refusal is held by the refusal delay", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			d := NewRefusalDelay(50*time.Millisecond, 10, nil)
			defer d.Close()
			var served int
			var refused []string
			h := chain(newLimiter(t, 1, 1), nil, nil, d, &served, &refused)
			send(h, "192.0.2.1:1000", "")
			start := time.Now()
			if rec := send(h, "192.0.2.1:1000", ""); rec.Code != http.StatusTooManyRequests {
				t.Fatalf("status %d, want 429", rec.Code)
			}
			if held := time.Since(start); held < 40*time.Millisecond {
				t.Fatalf("refusal answered after %v, want held about 50 ms", held)
			}
		})
	})
	t.Run("TRUSTED_PROXIES' forwarded address is the key", func(t *testing.T) {
		var served int
		var refused []string
		proxy := netip.MustParsePrefix("10.0.0.0/8")
		h := chain(newLimiter(t, 1, burst), nil, []netip.Prefix{proxy}, nil, &served, &refused)
		// Two clients behind the one proxy: each its own budget.
		if got := admitted(t, h, 2*burst, "10.0.0.1:1000", "198.51.100.7"); got != burst {
			t.Fatalf("first forwarded client: %d admitted, want %d", got, burst)
		}
		if got := admitted(t, h, 2*burst, "10.0.0.1:1000", "spoofed, 198.51.100.8"); got != burst {
			t.Fatalf("second forwarded client: %d admitted, want %d", got, burst)
		}
		// A peer that is no trusted proxy cannot pick its key by writing
		// the header.
		if got := admitted(t, h, 2*burst, "203.0.113.5:1000", "198.51.100.9"); got != burst {
			t.Fatalf("untrusted peer: %d admitted, want %d", got, burst)
		}
		if got := admitted(t, h, 1, "203.0.113.5:1000", "198.51.100.10"); got != 0 {
			t.Fatal("an untrusted peer got a fresh budget by writing X-Forwarded-For")
		}
	})
	t.Run("a merchant and preflights are not charged", func(t *testing.T) {
		var served int
		var refused []string
		h := chain(newLimiter(t, 1, 1), nil, nil, nil, &served, &refused)
		for range 10 {
			req := httptest.NewRequest(http.MethodPost, "/graphql", nil)
			req = req.WithContext(context.WithValue(req.Context(), merchantKey{}, "merchant-a"))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			pre := httptest.NewRecorder()
			h.ServeHTTP(pre, httptest.NewRequest(http.MethodOptions, "/graphql", nil))
			if rec.Code != http.StatusOK || pre.Code != http.StatusOK {
				t.Fatalf("merchant %d, preflight %d", rec.Code, pre.Code)
			}
		}
	})
	t.Run("off when 0: a nil limiter charges nothing", func(t *testing.T) {
		var served int
		var refused []string
		h := chain(nil, nil, nil, nil, &served, &refused)
		if got := admitted(t, h, 100, "192.0.2.1:1000", ""); got != 100 {
			t.Fatalf("%d of 100 admitted", got)
		}
	})
}
