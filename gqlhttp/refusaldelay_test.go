package gqlhttp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"paygraph/graph/errcode"
	"sync"
	"testing"
	"time"

	"paygraph/ratelimit"
	"paygraph/restclient"
)

// fakeTimers is RefusalDelay's clock in tests: a timer fires only when the
// test fires it, so no assertion depends on how fast the machine is.
type fakeTimers struct {
	mu     sync.Mutex
	asked  []time.Duration
	fire   []chan time.Time
	issued chan struct{}
}

func newFakeTimers(d *RefusalDelay) *fakeTimers {
	f := &fakeTimers{issued: make(chan struct{}, 1024)}
	d.timer = func(dur time.Duration) (<-chan time.Time, func() bool) {
		c := make(chan time.Time, 1)
		f.mu.Lock()
		f.asked = append(f.asked, dur)
		f.fire = append(f.fire, c)
		f.mu.Unlock()
		f.issued <- struct{}{}
		return c, func() bool { return true }
	}
	return f
}

// started waits for the n-th timer to be started (a request held).
func (f *fakeTimers) started(t *testing.T) {
	t.Helper()
	select {
	case <-f.issued:
	case <-time.After(10 * time.Second):
		t.Fatal("no answer was held")
	}
}

func (f *fakeTimers) fireAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.fire {
		c <- time.Now()
	}
	f.fire = nil
}

func (f *fakeTimers) askedFor() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.asked...)
}

// heldRequest is one request served on its own goroutine.
type heldRequest struct {
	rec  *httptest.ResponseRecorder
	done chan struct{}
}

func serveAsync(h http.Handler, req *http.Request) *heldRequest {
	s := &heldRequest{rec: httptest.NewRecorder(), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		h.ServeHTTP(s.rec, req)
	}()
	return s
}

func (s *heldRequest) wait(t *testing.T) *httptest.ResponseRecorder {
	t.Helper()
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the held answer was never sent")
	}
	return s.rec
}

func (s *heldRequest) isDone() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// anonymousRefusing is the admission step, with d, whose anonymous budget
// (burst 1, one a minute) refuses every request after the first.
func anonymousRefusing(t *testing.T, d *RefusalDelay) http.Handler {
	t.Helper()
	l, err := ratelimit.New(ratelimit.Config{RequestsPerSecond: 1, RequestsBurst: 1})
	if err != nil {
		t.Fatal(err)
	}
	h := NewAdmission(AdmissionConfig{Anonymous: l, Merchant: merchantOf, Delay: d}).Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"data":{}}`))
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/graphql", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("first anonymous request: status %d", rec.Code)
	}
	return h
}

// TestRefusalDelay: refusals of callers the REST API has not accepted
// (the anonymous budget, the bounds on unaccepted pairs) are answered
// after their Retry-After (at most the maximum), at most N at once (the
// N+1st answered at once), and freed when their client leaves or at
// Close; a merchant's own 429, an admitted operation and an event stream
// are answered at once.
func TestRefusalDelay(t *testing.T) {
	t.Run("anonymous refusal held for its Retry-After", func(t *testing.T) {
		d := NewRefusalDelay(5*time.Second, 4, nil)
		f := newFakeTimers(d)
		h := anonymousRefusing(t, d)
		s := serveAsync(h, httptest.NewRequest(http.MethodPost, "/graphql", nil))
		f.started(t)
		if s.isDone() || d.Held() != 1 {
			t.Fatalf("done %v, held %d: the refusal was answered before its delay", s.isDone(), d.Held())
		}
		f.fireAll()
		rec := s.wait(t)
		if rec.Code != http.StatusTooManyRequests {
			t.Fatalf("status %d, want 429", rec.Code)
		}
		var body struct {
			Errors []struct {
				Extensions map[string]any `json:"extensions"`
			} `json:"errors"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || len(body.Errors) != 1 || body.Errors[0].Extensions["code"] != errcode.RateLimited {
			t.Fatalf("body %s (%v)", rec.Body, err)
		}
		retry := rec.Header().Get("Retry-After")
		if got := f.askedFor(); len(got) != 1 || retry == "" || got[0] != mustSeconds(t, retry) {
			t.Fatalf("held for %v, Retry-After %q: want the Retry-After", got, retry)
		}
		if d.Held() != 0 || d.Delayed() != 1 {
			t.Fatalf("held %d, delayed %d; want 0, 1", d.Held(), d.Delayed())
		}
	})

	t.Run("held at most the maximum", func(t *testing.T) {
		d := NewRefusalDelay(300*time.Millisecond, 4, nil)
		f := newFakeTimers(d)
		h := anonymousRefusing(t, d)
		s := serveAsync(h, httptest.NewRequest(http.MethodPost, "/graphql", nil))
		f.started(t)
		f.fireAll()
		s.wait(t)
		if got := f.askedFor(); len(got) != 1 || got[0] != 300*time.Millisecond {
			t.Fatalf("held for %v, want the maximum 300ms", got)
		}
	})

	t.Run("at most N held, the N+1st answered at once, Close frees all", func(t *testing.T) {
		const n = 3
		d := NewRefusalDelay(time.Hour, n, nil)
		f := newFakeTimers(d)
		h := anonymousRefusing(t, d)
		var held []*heldRequest
		for i := range n { // each from an address of its own: no share applies
			held = append(held, serveAsync(h, requestFrom(fmt.Sprintf("198.51.100.%d:1000", i+1))))
			f.started(t)
		}
		if d.Held() != n {
			t.Fatalf("held %d, want %d", d.Held(), n)
		}
		// On this goroutine: it returns only when answered.
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/graphql", nil))
		if rec.Code != http.StatusTooManyRequests {
			t.Fatalf("the N+1st: status %d, want 429 at once", rec.Code)
		}
		for _, s := range held {
			if s.isDone() {
				t.Fatal("a held refusal was answered before its delay")
			}
		}
		d.Close() // shutdown: no timer fired
		for _, s := range held {
			if rec := s.wait(t); rec.Code != http.StatusTooManyRequests {
				t.Fatalf("status %d, want 429", rec.Code)
			}
		}
		if d.Held() != 0 || d.Delayed() != n {
			t.Fatalf("held %d, delayed %d; want 0, %d", d.Held(), d.Delayed(), n)
		}
		// After Close nothing is held.
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/graphql", nil))
		if rec.Code != http.StatusTooManyRequests {
			t.Fatalf("after Close: status %d", rec.Code)
		}
	})

	t.Run("a client that leaves frees its place", func(t *testing.T) {
		d := NewRefusalDelay(time.Hour, 1, nil)
		f := newFakeTimers(d)
		h := anonymousRefusing(t, d)
		ctx, cancel := context.WithCancel(context.Background())
		s := serveAsync(h, httptest.NewRequest(http.MethodPost, "/graphql", nil).WithContext(ctx))
		f.started(t)
		cancel()
		s.wait(t)
		if d.Held() != 0 {
			t.Fatalf("held %d after the client left", d.Held())
		}
		// Its place is free: the next refusal is held.
		s = serveAsync(h, httptest.NewRequest(http.MethodPost, "/graphql", nil))
		f.started(t)
		if d.Held() != 1 {
			t.Fatalf("held %d, want 1", d.Held())
		}
		d.Close()
		s.wait(t)
	})

	t.Run("unaccepted pair refused by admit", func(t *testing.T) {
		d := NewRefusalDelay(5*time.Second, 4, nil)
		f := newFakeTimers(d)
		admit := func(context.Context) error {
			return &restclient.Error{Kind: restclient.KindRateLimited, Message: "over the budget of unaccepted pairs", RetryAfter: 3 * time.Second}
		}
		h := NewAdmission(AdmissionConfig{Merchant: notMerchant, Admit: admit, Delay: d}).Middleware(operation(t))
		req := httptest.NewRequest(http.MethodPost, "/graphql", nil)
		req = req.WithContext(restclient.WithCredentials(req.Context(), restclient.Credentials{APIKey: "k", APISecret: "s"}))
		s := serveAsync(h, req)
		f.started(t)
		if s.isDone() {
			t.Fatal("answered before its delay")
		}
		f.fireAll()
		if rec := s.wait(t); rec.Code != http.StatusOK || rec.Body.String() != "RATE_LIMITED" {
			t.Fatalf("status %d, body %q", rec.Code, rec.Body)
		}
		if got := f.askedFor(); len(got) != 1 || got[0] != 3*time.Second {
			t.Fatalf("held for %v, want the refusal's Retry-After 3s", got)
		}
	})

	t.Run("a pair the REST API refused", func(t *testing.T) {
		rest := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":"Invalid API credentials"}`))
		}))
		defer rest.Close()
		rc, err := restclient.New(restclient.Config{BaseURL: rest.URL,
			Limiter: restclient.NewLimiter(restclient.LimiterConfig{Unaccepted: restclient.UnacceptedConfig{CallsPerSecond: 100, RefusedTTL: time.Minute}})})
		if err != nil {
			t.Fatal(err)
		}
		d := NewRefusalDelay(5*time.Second, 4, nil)
		f := newFakeTimers(d)
		h := NewAdmission(AdmissionConfig{Merchant: merchantOf, Delay: d}).Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, err := rc.GetPayment(r.Context(), "pay_prod_0123456789abcdef0123456789abcdef")
			_, _ = w.Write([]byte(errcode.Of(err)))
		}))
		req := httptest.NewRequest(http.MethodPost, "/graphql", nil)
		req = req.WithContext(restclient.WithCredentials(req.Context(), restclient.Credentials{APIKey: "ak_test_invented", APISecret: "sk_test_invented"}))
		s := serveAsync(h, req)
		f.started(t)
		if s.isDone() {
			t.Fatal("answered before its delay")
		}
		f.fireAll()
		if rec := s.wait(t); rec.Body.String() != "UNAUTHENTICATED" {
			t.Fatalf("body %q", rec.Body)
		}
		if got := f.askedFor(); len(got) != 1 || got[0] != 5*time.Second {
			t.Fatalf("held for %v, want the maximum (a 401 says no Retry-After)", got)
		}
	})

	t.Run("answered at once", func(t *testing.T) {
		d := NewRefusalDelay(time.Hour, 4, nil)
		f := newFakeTimers(d)
		cases := []struct {
			name string
			h    http.Handler
			req  func() *http.Request
		}{
			{"a merchant's own 429", func() http.Handler {
				l, err := ratelimit.New(ratelimit.Config{RequestsPerSecond: 1, RequestsBurst: 1})
				if err != nil {
					t.Fatal(err)
				}
				return NewAdmission(AdmissionConfig{Merchants: l, Merchant: merchantOf, Delay: d}).Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
			}(), func() *http.Request {
				r := httptest.NewRequest(http.MethodPost, "/graphql", nil)
				return r.WithContext(context.WithValue(r.Context(), merchantKey{}, "m1"))
			}},
			{"a batch with an admitted entry", func() http.Handler {
				first := true
				admit := func(context.Context) error {
					if first {
						first = false
						return nil
					}
					return &restclient.Error{Kind: restclient.KindRateLimited, Message: "over", RetryAfter: time.Second}
				}
				return NewAdmission(AdmissionConfig{Merchant: notMerchant, Admit: admit, Delay: d}).Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					a := budgetFrom(r.Context()).(*restCallBudget)
					_ = a.admitNow(r.Context())
					_ = a.admitNow(r.Context())
				}))
			}(), func() *http.Request {
				r := httptest.NewRequest(http.MethodPost, "/graphql", nil)
				return r.WithContext(restclient.WithCredentials(r.Context(), restclient.Credentials{APIKey: "k", APISecret: "s"}))
			}},
			{"an event stream", anonymousRefusing(t, d), func() *http.Request {
				r := httptest.NewRequest(http.MethodPost, "/graphql", nil)
				r.Header.Set("Accept", "text/event-stream")
				return r
			}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				// Twice: the merchant's second request is over its burst.
				for range 2 {
					s := serveAsync(c.h, c.req())
					select {
					case <-s.done:
					case <-f.issued:
						d.Close()
						t.Fatal("held")
					}
				}
			})
		}
		if got := f.askedFor(); len(got) != 0 || d.Delayed() != 0 {
			t.Fatalf("held %v", got)
		}
	})
}

// operation is the GraphQL server's part in a test: it asks the
// request's admitter, as graph does before the plan, and writes the
// refusal's code (or "ok").
func operation(t *testing.T) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, ok := budgetFrom(r.Context()).(*restCallBudget)
		if !ok {
			t.Error("no admitter")
			return
		}
		if err := a.admitNow(r.Context()); err != nil {
			_, _ = w.Write([]byte(err.Extensions["code"].(string)))
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
}

func mustSeconds(t *testing.T, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(s + "s")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// requestFrom is a POST /graphql from addr (host:port).
func requestFrom(addr string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/graphql", nil)
	r.RemoteAddr = addr
	return r
}

// TestRefusalShare: one address holds at most refusalShare of the held
// refusals; past it a refusal is answered at once with its connection
// closed and its peer reported, as it is for each held from half the
// share on (the listener then closes the address's new connections),
// while another address is still held. Behind a trusted
// proxy the share is the forwarded client's, and the proxy's connection is
// neither closed nor reported.
func TestRefusalShare(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		maxHeld int
		share   int
	}{
		{"256 held", 256, 16},
		{"a small cap: one each", 4, 1},
		{"none held", 0, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := refusalShare(c.maxHeld); got != c.share {
				t.Fatalf("refusalShare(%d) = %d, want %d", c.maxHeld, got, c.share)
			}
		})
	}

	trusted := []netip.Prefix{netip.MustParsePrefix("10.9.0.0/16")}
	cases := []struct {
		name       string
		flood      func() *http.Request // from the flooding client
		other      func() *http.Request // another client
		wantPeer   string               // reported past the share ("": none)
		wantClosed bool
	}{
		{"a direct client",
			func() *http.Request { return requestFrom("192.0.2.7:1000") },
			func() *http.Request { return requestFrom("198.51.100.1:1000") },
			"192.0.2.7", true},
		{"the same /64",
			func() *http.Request { return requestFrom("[2001:db8::1]:1000") },
			func() *http.Request { return requestFrom("[2001:db8:1::1]:1000") },
			"2001:db8::1", true},
		{"behind a trusted proxy",
			func() *http.Request {
				r := requestFrom("10.9.0.1:1000")
				r.Header.Set("X-Forwarded-For", "192.0.2.7")
				return r
			},
			func() *http.Request {
				r := requestFrom("10.9.0.1:1000")
				r.Header.Set("X-Forwarded-For", "198.51.100.1")
				return r
			},
			"", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := NewRefusalDelay(time.Hour, 32, trusted)
			share := refusalShare(32)
			f := newFakeTimers(d)
			var reported []string
			d.OnPastShare(func(peer netip.Addr) { reported = append(reported, peer.String()) })
			h := anonymousRefusing(t, d)
			var held []*heldRequest
			for range share {
				held = append(held, serveAsync(h, c.flood()))
				f.started(t)
			}
			// The one that fills the share is reported (the listener
			// then holds the address's new connections off).
			// Held from half the share on: reported, each.
			if want := c.wantPeer; want == "" && len(reported) != 0 || want != "" && len(reported) != share-(share+1)/2+1 {
				t.Fatalf("at the share: reported %v, want %q from half the share (%d) on", reported, want, share)
			}
			atShare := len(reported)
			// Past the share: at once (on this goroutine).
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, c.flood())
			if rec.Code != http.StatusTooManyRequests {
				t.Fatalf("past the share: status %d, want 429 at once", rec.Code)
			}
			if closed := rec.Header().Get("Connection") == "close"; closed != c.wantClosed {
				t.Fatalf("past the share: connection closed %v, want %v", closed, c.wantClosed)
			}
			if want := c.wantPeer; want == "" && len(reported) != 0 || want != "" && len(reported) != atShare+1 {
				t.Fatalf("past the share: reported %v, want %q once more", reported, want)
			}
			for _, got := range reported {
				if got != c.wantPeer {
					t.Fatalf("reported %v, want only %q", reported, c.wantPeer)
				}
			}
			// Another client is held still.
			other := serveAsync(h, c.other())
			f.started(t)
			if d.Held() != share+1 {
				t.Fatalf("held %d, want %d", d.Held(), share+1)
			}
			d.Close()
			for _, s := range append(held, other) {
				if rec := s.wait(t); rec.Code != http.StatusTooManyRequests || rec.Header().Get("Connection") != "" {
					t.Fatalf("a held refusal: status %d, Connection %q", rec.Code, rec.Header().Get("Connection"))
				}
			}
			d.mu.Lock()
			left := len(d.byAddr)
			d.mu.Unlock()
			if left != 0 || d.Held() != 0 {
				t.Fatalf("%d addresses, %d held after all were answered; want none", left, d.Held())
			}
		})
	}
}

// notMerchant names no request a merchant: every pair is one the REST API
// has not accepted.
func notMerchant(context.Context) (string, bool) { return "", false }
