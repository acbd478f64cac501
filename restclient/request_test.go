package restclient

// The request a REST call sends: made from a template, with a header
// shared by the calls of one context (credentialsValue.requestHeader).

import (
	"context"
	"net/http"
	"net/http/cookiejar"
	"sync"
	"testing"
)

// headerRecorder is a RoundTripper that remembers each request's header
// map and answers a payment.
type headerRecorder struct {
	mu      sync.Mutex
	headers []http.Header
	next    http.RoundTripper
}

func (h *headerRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	h.mu.Lock()
	h.headers = append(h.headers, r.Header)
	h.mu.Unlock()
	return h.next.RoundTrip(r)
}

// TestRequestHeaderSharedByContext: the calls of one context send the
// same header map (built once), the calls of another context another;
// every call's request is a GET with the credentials, Accept, the URL and
// Host of the call, and the context the call's deadline.
func TestRequestHeaderSharedByContext(t *testing.T) {
	t.Parallel()
	srv := jsonServer(t, http.StatusOK, paymentBody)
	rec := &headerRecorder{next: http.DefaultTransport}
	c := newClient(t, Config{BaseURL: srv.URL, HTTPClient: &http.Client{Transport: rec}})
	ctxA, ctxB := credCtx(), WithCredentials(context.Background(), Credentials{APIKey: "ak_test_other", APISecret: "sk_test_other"})
	for _, ctx := range []context.Context{ctxA, ctxA, ctxB} {
		_, _ = c.GetPayment(ctx, "pay_1") // ctxB's answer does not match its id: the request is what counts
	}
	if len(rec.headers) != 3 {
		t.Fatalf("%d requests, want 3", len(rec.headers))
	}
	if !sameMap(rec.headers[0], rec.headers[1]) {
		t.Error("two calls of one context sent different header maps")
	}
	if sameMap(rec.headers[0], rec.headers[2]) {
		t.Error("calls of two contexts shared a header map")
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	for i, r := range srv.reqs {
		wantKey, wantSecret := testKey, testSecret
		if i == 2 {
			wantKey, wantSecret = "ak_test_other", "sk_test_other"
		}
		if r.Method != http.MethodGet || r.EscapedPath != "/api/v1/payments/pay_1" || r.Key != wantKey || r.Secret != wantSecret || r.Accept != "application/json" {
			t.Errorf("request %d: %+v", i, r)
		}
	}
}

// sameMap tells whether a and b are one map (writing to one shows in the
// other).
func sameMap(a, b http.Header) bool {
	const probe = "X-Paygraph-Same-Map-Probe"
	a[probe] = nil
	_, ok := b[probe]
	delete(a, probe)
	return ok
}

// TestRequestHeaderWithCookieJar: through an http.Client that writes to
// the request's header (a cookie jar's cookies), each call has a header
// of its own: a cookie set by the REST API is sent once on each later
// call, never piled up on a header the calls share.
func TestRequestHeaderWithCookieJar(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var cookies []string
	srv := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		cookies = append(cookies, r.Header.Get("Cookie"))
		mu.Unlock()
		http.SetCookie(w, &http.Cookie{Name: "lb", Value: "1", Path: "/"})
		_, _ = w.Write([]byte(paymentBody))
	})
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, Config{BaseURL: srv.URL, HTTPClient: &http.Client{Jar: jar}})
	ctx := credCtx()
	for range 3 {
		if _, err := c.GetPayment(ctx, "pay_prod_0123456789abcdef0123456789abcdef"); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"", "lb=1", "lb=1"}
	for i := range want {
		if cookies[i] != want[i] {
			t.Errorf("call %d sent Cookie %q, want %q (all: %q)", i, cookies[i], want[i], cookies)
		}
	}
	var wg sync.WaitGroup // concurrent calls of one context: no race on a shared header (go test -race)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = c.GetPayment(ctx, "pay_1")
		}()
	}
	wg.Wait()
}
