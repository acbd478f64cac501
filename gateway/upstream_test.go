package gateway_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"paygraph/gateway"
	"paygraph/sandbox"
)

// countingREST is an httptest REST API whose answer a test chooses.
type countingREST struct {
	calls  atomic.Int64
	handle func(w http.ResponseWriter, r *http.Request)
}

func (c *countingREST) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.calls.Add(1)
	c.handle(w, r)
}

var anyCreds = creds(sandbox.Business{APIKey: "ak_test_caller", APISecret: "sk_test_caller"})

func paymentJSON(amount, created string) string {
	return fmt.Sprintf(`{"id":"pay_prod_0123456789abcdef0123456789abcdef","status":"SUCCEEDED","amount":%s,"currency":"BDT",
		"payment_method":"bkash","customer":{"name":"A","email":"a@example.com","phone":"017","address":"Dhaka"},
		"created_at":%q,"updated_at":"2026-11-21T09:30:00.000Z"}`, amount, created)
}

func TestErrorCodes(t *testing.T) {
	hang := make(chan struct{})
	t.Cleanup(func() { close(hang) })
	for _, tc := range []struct {
		name       string
		status     int
		body       string
		header     map[string]string
		code       string
		message    string
		retryAfter float64
	}{
		{name: "401", status: 401, body: `{"error":"Invalid API credentials"}`, code: "UNAUTHENTICATED", message: "Invalid API credentials"},
		{name: "403", status: 403, body: `{"error":"Forbidden"}`, code: "FORBIDDEN"},
		{name: "404", status: 404, body: `{"error":"Payment not found"}`, code: "NOT_FOUND", message: "Payment not found"},
		{name: "400 not found", status: 400, body: `{"error":"Payment not found"}`, code: "NOT_FOUND", message: "Payment not found"},
		{name: "400", status: 400, body: `{"error":"Invalid parameter"}`, code: "BAD_USER_INPUT"},
		{name: "429", status: 429, body: `{"error":"Too many requests"}`, header: map[string]string{"Retry-After": "7"}, code: "RATE_LIMITED", retryAfter: 7},
		{name: "500", status: 500, body: `{"error":"boom"}`, code: "UPSTREAM_ERROR"},
		{name: "503 html", status: 503, body: `<html>down</html>`, code: "UPSTREAM_ERROR"},
		{name: "200 not json", status: 200, body: `<html>hello</html>`, code: "UPSTREAM_ERROR"},
		{name: "200 wrong shape", status: 200, body: `{"id": 5}`, code: "UPSTREAM_ERROR"},
		{name: "200 float amount", status: 200, body: paymentJSON(`19.999`, "2026-11-21T09:30:00.000Z"), code: "UPSTREAM_ERROR"},
		{name: "hang", status: -1, code: "UPSTREAM_TIMEOUT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var healthy atomic.Bool
			rest := &countingREST{handle: func(w http.ResponseWriter, r *http.Request) {
				if healthy.Load() {
					_, _ = w.Write([]byte(paymentJSON("19.99", "2026-11-21T09:30:00.000Z")))
					return
				}
				if tc.status < 0 {
					select {
					case <-hang:
					case <-r.Context().Done():
					}
					return
				}
				for k, v := range tc.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}}
			g := startGateway(t, setup{env: map[string]string{"REST_TIMEOUT": "300ms"}, rest: rest})
			start := time.Now()
			r := g.Post(t, anyCreds, `{ payment(id: "pay_prod_0123456789abcdef0123456789abcdef") { id } }`, nil)
			if elapsed := time.Since(start); elapsed > 5*time.Second {
				t.Errorf("took %v", elapsed)
			}
			e := r.WantCode(t, tc.code)
			if tc.message != "" && e.Message != tc.message {
				t.Errorf("message %q, want %q", e.Message, tc.message)
			}
			if tc.retryAfter != 0 && e.Extensions["retryAfter"] != tc.retryAfter {
				t.Errorf("retryAfter %v, want %v", e.Extensions["retryAfter"], tc.retryAfter)
			}
			if string(r.Data) != `{"payment":null}` {
				t.Errorf("data %s", r.Data)
			}
			if strings.Contains(e.Message, "sk_test_caller") {
				t.Errorf("message leaks the secret: %q", e.Message)
			}

			// After the fault, the next normal query answers correctly.
			healthy.Store(true)
			r = g.Post(t, anyCreds, `{ payment(id: "pay_prod_0123456789abcdef0123456789abcdef") { amount { amount } } }`, nil)
			r.WantNoErrors(t)
			if string(r.Data) != `{"payment":{"amount":{"amount":"19.99"}}}` {
				t.Errorf("after the fault: %s", r.Data)
			}
		})
	}
}

func TestMoneyAndTimeExactness(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		amount, created string
		wantAmount      string
		wantPaisa       int64
		wantCreated     string
	}{
		{"19.99", "2026-11-21T09:30:00.000Z", "19.99", 1999, "2026-11-21T09:30:00.000Z"},
		{"0.29", "2026-11-21T09:30:00Z", "0.29", 29, "2026-11-21T09:30:00.000Z"},
		{"100.1", "2026-11-21T09:30:00.5Z", "100.10", 10010, "2026-11-21T09:30:00.500Z"},
		{"1.15", "2026-11-21T15:30:00.123+06:00", "1.15", 115, "2026-11-21T09:30:00.123Z"},
		{"4.35", "2026-01-02T03:04:05.006Z", "4.35", 435, "2026-01-02T03:04:05.006Z"},
		{"8.2", "2026-11-21T09:30:00.000Z", "8.20", 820, "2026-11-21T09:30:00.000Z"},
		{"1250", "2026-11-21T09:30:00.000Z", "1250.00", 125000, "2026-11-21T09:30:00.000Z"},
		{"99999999.99", "2026-11-21T09:30:00.000Z", "99999999.99", 9999999999, "2026-11-21T09:30:00.000Z"},
		{"0.01", "2026-11-21T09:30:00.000Z", "0.01", 1, "2026-11-21T09:30:00.000Z"},
		{"1e2", "2026-11-21T09:30:00.000Z", "100.00", 10000, "2026-11-21T09:30:00.000Z"},
		{"90071992547409.91", "2026-11-21T09:30:00.000Z", "90071992547409.91", 9007199254740991, "2026-11-21T09:30:00.000Z"},
	} {
		t.Run(tc.amount, func(t *testing.T) {
			rest := &countingREST{handle: func(w http.ResponseWriter, r *http.Request) {
				_, _ = w.Write([]byte(paymentJSON(tc.amount, tc.created)))
			}}
			g := startGateway(t, setup{rest: rest})
			r := g.Post(t, anyCreds, `{ payment(id: "pay_prod_0123456789abcdef0123456789abcdef") { amount { amount paisa } createdAt } }`, nil)
			r.WantNoErrors(t)
			want := fmt.Sprintf(`{"payment":{"amount":{"amount":%q,"paisa":%d},"createdAt":%q}}`, tc.wantAmount, tc.wantPaisa, tc.wantCreated)
			if string(r.Data) != want {
				t.Errorf("got  %s\nwant %s", r.Data, want)
			}
		})
	}
}

// TestCredentialsNeverCrossCallers runs many callers at once, each with
// its own credential pair asking for its own id; the REST server checks
// that every call carries the pair of the caller whose id it asks for.
func TestCredentialsNeverCrossCallers(t *testing.T) {
	var crossed atomic.Int64
	// The callers' calls are in flight two at a time at least (one when
	// a single caller is left).
	together := gateway.NewOverlap(2)
	var callers atomic.Int64
	callers.Store(20)
	rest := &countingREST{handle: func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
		caller := strings.TrimPrefix(id, "pay_prod_")
		if r.Header.Get("x-api-key") != "ak_test_"+caller || r.Header.Get("x-api-secret") != "sk_test_"+caller {
			crossed.Add(1)
		}
		together.Hold()
		_, _ = fmt.Fprint(w, strings.Replace(paymentJSON("1.00", "2026-11-21T09:30:00.000Z"), "pay_prod_0123456789abcdef0123456789abcdef", id, 1))
	}}
	g := startGateway(t, setup{rest: rest})
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if left := callers.Add(-1); left < 2 {
					together.SetN(int(left))
				}
			}()
			caller := fmt.Sprintf("c%02d", i)
			h := creds(sandbox.Business{APIKey: "ak_test_" + caller, APISecret: "sk_test_" + caller})
			for range 10 {
				r := g.Post(t, h, fmt.Sprintf(`{ a: payment(id: "pay_prod_%s") { id } b: node(id: "pay_prod_%s") { id } }`, caller, caller), nil)
				if len(r.Errors) > 0 || !strings.Contains(string(r.Data), caller) {
					t.Errorf("caller %s got %s %+v", caller, r.Data, r.Errors)
				}
			}
		}()
	}
	wg.Wait()
	if n := crossed.Load(); n != 0 {
		t.Fatalf("%d REST calls carried another caller's credentials", n)
	}
	if n := rest.calls.Load(); n != 200 {
		t.Errorf("REST calls = %d, want 200 (one per request)", n)
	}
}

// TestTransientFaultIsRetried: a 502 then a 200 answers the query, in two
// REST calls; a 500 is not retried.
func TestTransientFaultIsRetried(t *testing.T) {
	for _, tc := range []struct {
		first     int
		wantCalls int64
		wantOK    bool
	}{{502, 2, true}, {503, 2, true}, {500, 1, false}} {
		t.Run(fmt.Sprint("first answer ", tc.first), func(t *testing.T) {
			var n atomic.Int64
			rest := &countingREST{handle: func(w http.ResponseWriter, r *http.Request) {
				if n.Add(1) == 1 {
					w.WriteHeader(tc.first)
					return
				}
				_, _ = w.Write([]byte(paymentJSON("1.00", "2026-11-21T09:30:00.000Z")))
			}}
			g := startGateway(t, setup{rest: rest})
			r := g.Post(t, anyCreds, `{ payment(id: "pay_prod_0123456789abcdef0123456789abcdef") { id } }`, nil)
			if ok := len(r.Errors) == 0; ok != tc.wantOK || rest.calls.Load() != tc.wantCalls {
				t.Errorf("first answer %d: errors %+v, %d calls", tc.first, r.Errors, rest.calls.Load())
			}
		})
	}
}

// TestBreakerThroughTheGateway: with the REST API unreachable the breaker
// opens, queries fail fast with UPSTREAM_ERROR, and it recovers by itself.
func TestBreakerThroughTheGateway(t *testing.T) {
	var down atomic.Bool
	down.Store(true)
	rest := &countingREST{handle: func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte(paymentJSON("1.00", "2026-11-21T09:30:00.000Z")))
	}}
	g := startGateway(t, setup{env: map[string]string{"REST_MAX_RETRIES": "0", "BREAKER_FAILURES": "3", "Config.BreakerCooldown": "150ms"}, rest: rest})
	q := `{ payment(id: "pay_prod_0123456789abcdef0123456789abcdef") { id } }`
	for range 3 {
		g.Post(t, anyCreds, q, nil).WantCode(t, "UPSTREAM_ERROR")
	}
	before := rest.calls.Load()
	if e := g.Post(t, anyCreds, q, nil).WantCode(t, "UPSTREAM_ERROR"); !strings.Contains(e.Message, "circuit open") || rest.calls.Load() != before {
		t.Fatalf("open breaker: %q, %d new calls", e.Message, rest.calls.Load()-before)
	}
	down.Store(false)
	// Past the cooldown the breaker lets a probe through, which closes it.
	waitFor(t, func() bool { return len(g.Post(t, anyCreds, q, nil).Errors) == 0 })
	g.Post(t, anyCreds, q, nil).WantNoErrors(t)
}
