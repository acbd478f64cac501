package sandbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"paygraph/sandbox"
)

// allBodies fetches every page (limit 13), every payment, link and session
// of every business and returns the bodies in a fixed order.
func allBodies(t *testing.T, e *env) []string {
	t.Helper()
	var out []string
	for _, biz := range e.sb.Businesses() {
		q := url.Values{"limit": {"13"}}
		for {
			r := e.get(t, "/api/v1/payments?"+q.Encode(), &biz)
			out = append(out, string(r.body))
			m := decode(t, r.body)
			next, ok := m["next_cursor"].(string)
			if !ok {
				break
			}
			q.Set("cursor", next)
		}
		for _, p := range e.sb.Payments(biz.APIKey) {
			out = append(out, string(e.get(t, "/api/v1/payments/"+p.ID, &biz).body))
		}
		for _, l := range e.sb.PaymentLinks(biz.APIKey) {
			out = append(out, string(e.get(t, "/api/v1/payment-links/"+l.ID, &biz).body))
		}
		for _, s := range e.sb.CheckoutSessions(biz.APIKey) {
			out = append(out, string(e.get(t, "/api/v1/checkout/sessions/"+s.Reference, &biz).body))
		}
	}
	return out
}

func TestDeterminism(t *testing.T) {
	t.Parallel()
	e1 := newEnv(t, sandbox.Options{})
	e2 := newEnv(t, sandbox.Options{Seed: sandbox.DefaultSeed})
	if !slices.Equal(e1.sb.Businesses(), e2.sb.Businesses()) {
		t.Fatal("businesses differ")
	}
	b1, b2 := allBodies(t, e1), allBodies(t, e2)
	if !slices.Equal(b1, b2) {
		t.Fatal("same seed rendered different bodies")
	}

	e3 := newEnv(t, sandbox.Options{Seed: 42})
	if !slices.Equal(e1.sb.Businesses(), e3.sb.Businesses()) {
		t.Error("credentials should not depend on the seed")
	}
	if slices.Equal(e1.sb.Payments(e1.a.APIKey), e3.sb.Payments(e3.a.APIKey)) {
		t.Error("different seeds gave the same payments")
	}
	e4 := newEnv(t, sandbox.Options{Seed: 42})
	if !slices.Equal(allBodies(t, e3), allBodies(t, e4)) {
		t.Error("seed 42 not deterministic")
	}
}

func TestAccessorsReturnCopies(t *testing.T) {
	t.Parallel()
	sb := sandbox.New(sandbox.Options{})
	key := sb.Businesses()[0].APIKey
	p := sb.Payments(key)
	p[0].ID = "mutated"
	if sb.Payments(key)[0].ID == "mutated" {
		t.Error("Payments is not a copy")
	}
	l := sb.PaymentLinks(key)
	for i := range l {
		if l[i].MaxUses != nil {
			*l[i].MaxUses = -1
		}
		l[i].Title = "mutated"
	}
	for _, x := range sb.PaymentLinks(key) {
		if x.Title == "mutated" || (x.MaxUses != nil && *x.MaxUses == -1) {
			t.Fatal("PaymentLinks is not a deep copy")
		}
	}
	s := sb.CheckoutSessions(key)
	for i := range s {
		if len(s[i].MetaData) > 0 {
			s[i].MetaData[0].Value = "mutated"
		}
	}
	for _, x := range sb.CheckoutSessions(key) {
		if len(x.MetaData) > 0 && x.MetaData[0].Value == "mutated" {
			t.Fatal("CheckoutSessions is not a deep copy")
		}
	}
}

func TestCallAccounting(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sandbox.Options{})
	pay := e.sb.Payments(e.a.APIKey)[0].ID
	e.get(t, "/api/v1/payments?limit=2", &e.a)
	e.get(t, "/api/v1/payments?limit=3&status=FAILED", &e.a)
	e.get(t, "/api/v1/payments/"+pay, &e.a)
	e.get(t, "/api/v1/payment-links/pl_x", &e.b)
	e.get(t, "/api/v1/checkout/sessions/x", &e.a)
	e.get(t, "/api/v1/checkout/sessions/y", nil)
	e.get(t, "/nope", &e.a)

	counts := map[string]int{
		"":                             7,
		sandbox.RoutePayments:          2,
		sandbox.RoutePayment:           1,
		sandbox.RoutePaymentLink:       1,
		sandbox.RouteCheckoutSession:   2,
		"/api/v1/something-never-seen": 0,
	}
	for route, want := range counts {
		if got := e.sb.CallCount(route); got != want {
			t.Errorf("CallCount(%q) = %d, want %d", route, got, want)
		}
	}
	calls := e.sb.Calls()
	want := []sandbox.Call{
		{Method: "GET", Route: sandbox.RoutePayments, EscapedPath: "/api/v1/payments", RawQuery: "limit=2", APIKey: e.a.APIKey, APISecret: e.a.APISecret, Status: 200},
		{Method: "GET", Route: sandbox.RoutePayments, EscapedPath: "/api/v1/payments", RawQuery: "limit=3&status=FAILED", APIKey: e.a.APIKey, APISecret: e.a.APISecret, Status: 200},
		{Method: "GET", Route: sandbox.RoutePayment, EscapedPath: "/api/v1/payments/" + pay, APIKey: e.a.APIKey, APISecret: e.a.APISecret, Status: 200},
		{Method: "GET", Route: sandbox.RoutePaymentLink, EscapedPath: "/api/v1/payment-links/pl_x", APIKey: e.b.APIKey, APISecret: e.b.APISecret, Status: 404},
		{Method: "GET", Route: sandbox.RouteCheckoutSession, EscapedPath: "/api/v1/checkout/sessions/x", APIKey: e.a.APIKey, APISecret: e.a.APISecret, Status: 404},
		{Method: "GET", Route: sandbox.RouteCheckoutSession, EscapedPath: "/api/v1/checkout/sessions/y", Status: 401},
		{Method: "GET", Route: "", EscapedPath: "/nope", APIKey: e.a.APIKey, APISecret: e.a.APISecret, Status: 404},
	}
	if !slices.Equal(calls, want) {
		t.Errorf("calls:\n got %+v\nwant %+v", calls, want)
	}
	calls[0].Method = "mutated"
	if e.sb.Calls()[0].Method != "GET" {
		t.Error("Calls is not a copy")
	}
	e.sb.ResetCalls()
	if n := e.sb.CallCount(""); n != 0 || len(e.sb.Calls()) != 0 {
		t.Errorf("after reset: %d", n)
	}
	e.get(t, "/api/v1/payments", &e.a)
	if n := e.sb.CallCount(sandbox.RoutePayments); n != 1 {
		t.Errorf("after reset and one call: %d", n)
	}
}

// waitCalls polls until the call log satisfies ok (handlers finish
// asynchronously from the client's point of view).
func waitCalls(t *testing.T, sb *sandbox.Server, ok func([]sandbox.Call) bool) []sandbox.Call {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c := sb.Calls()
		if ok(c) {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("call log never satisfied condition: %+v", c)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestLatency runs the sandbox's handler in a synctest bubble, called
// directly (no socket): the added latency is exact on the bubble's clock.
func TestLatency(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const latency = 60 * time.Millisecond
		sb := sandbox.New(sandbox.Options{Latency: latency})
		a := sb.Businesses()[0]
		serve := func(ctx context.Context) (int, time.Duration) {
			req := httptest.NewRequestWithContext(ctx, http.MethodGet, "/api/v1/payments?limit=1", nil)
			req.Header.Set("x-api-key", a.APIKey)
			req.Header.Set("x-api-secret", a.APISecret)
			rec := httptest.NewRecorder()
			start := time.Now()
			sb.ServeHTTP(rec, req)
			return rec.Code, time.Since(start)
		}
		if status, took := serve(context.Background()); status != 200 || took != latency {
			t.Fatalf("status %d after %v, want 200 after the latency, %v", status, took, latency)
		}

		sb.SetLatency(3 * time.Second)
		sb.SetLatency(0)
		if status, took := serve(context.Background()); status != 200 || took != 0 {
			t.Errorf("no-latency request: status %d after %v, want 200 at once", status, took)
		}

		// A long latency must not outlive the request context: the
		// handler returns when it ends, and writes nothing.
		sb.SetLatency(time.Minute)
		sb.ResetCalls()
		const deadline = 80 * time.Millisecond
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		if _, took := serve(ctx); took != deadline {
			t.Errorf("the handler returned %v after the request, want at its context's end, %v", took, deadline)
		}
		if c := sb.Calls(); len(c) != 1 || c[0].Status != 0 {
			t.Errorf("calls %+v", c)
		}
	})
}

func TestFaults(t *testing.T) {
	t.Parallel()
	type check func(t *testing.T, res *http.Response, body []byte, err error)
	wantStatus := func(status int, msg string) check {
		return func(t *testing.T, res *http.Response, body []byte, err error) {
			if err != nil {
				t.Fatalf("err %v", err)
			}
			wantError(t, resp{status: res.StatusCode, header: res.Header, body: body}, status, msg)
		}
	}
	cases := []struct {
		fault      sandbox.Fault
		check      check
		wantStatus int
	}{
		{sandbox.FaultNone, func(t *testing.T, res *http.Response, body []byte, err error) {
			// normal handling: the unknown ids and route give 404
			if err != nil || (res.StatusCode != 200 && res.StatusCode != 404) {
				t.Fatalf("%v %v", res, err)
			}
		}, 200},
		{sandbox.Fault500, wantStatus(500, "Internal server error"), 500},
		{sandbox.Fault502, wantStatus(502, "Bad gateway"), 502},
		{sandbox.Fault503, wantStatus(503, "Service unavailable"), 503},
		{sandbox.Fault429, func(t *testing.T, res *http.Response, body []byte, err error) {
			wantStatus(429, "Too many requests")(t, res, body, err)
			if ra := res.Header.Get("Retry-After"); ra != "7" {
				t.Errorf("Retry-After = %q", ra)
			}
		}, 429},
		{sandbox.FaultHang, func(t *testing.T, res *http.Response, body []byte, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("want deadline exceeded, got %v", err)
			}
		}, 0},
		{sandbox.FaultDrop, func(t *testing.T, res *http.Response, body []byte, err error) {
			if err == nil {
				t.Fatalf("want a transport error, got %d %s", res.StatusCode, body)
			}
			if errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("drop should fail fast, got %v", err)
			}
		}, 0},
		{sandbox.FaultBadJSON, func(t *testing.T, res *http.Response, body []byte, err error) {
			if err != nil || res.StatusCode != 200 {
				t.Fatalf("%v %v", res, err)
			}
			if ct := res.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			var v any
			if json.Unmarshal(body, &v) == nil {
				t.Errorf("body is valid JSON: %s", body)
			}
		}, 200},
	}
	paths := []string{"/api/v1/payments", "/api/v1/payments/x", "/api/v1/payment-links/x", "/api/v1/checkout/sessions/x", "/unknown"}
	for _, c := range cases {
		t.Run(c.fault.String(), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, sandbox.Options{})
			e.client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
			var seen []sandbox.Call
			var mu sync.Mutex
			e.sb.SetFaults(func(call sandbox.Call) sandbox.Fault {
				mu.Lock()
				seen = append(seen, call)
				mu.Unlock()
				return c.fault
			})
			for _, p := range paths {
				ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.ts.URL+p, nil)
				req.Header.Set("x-api-key", e.a.APIKey)
				req.Header.Set("x-api-secret", e.a.APISecret)
				res, err := e.client.Do(req)
				var body []byte
				if err == nil {
					body, err = io.ReadAll(res.Body)
					res.Body.Close()
				}
				cancel()
				c.check(t, res, body, err)
			}
			calls := waitCalls(t, e.sb, func(cs []sandbox.Call) bool {
				if len(cs) < len(paths) {
					return false
				}
				for _, c := range cs {
					if c.Fault == sandbox.FaultNone && c.Status == 0 {
						return false
					}
				}
				return true
			})
			for _, call := range calls {
				if call.Fault != c.fault {
					t.Errorf("call %s recorded fault %v", call.EscapedPath, call.Fault)
				}
				if c.fault != sandbox.FaultNone && call.Status != c.wantStatus {
					t.Errorf("call %s recorded status %d, want %d", call.EscapedPath, call.Status, c.wantStatus)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seen) < len(paths) || seen[0].Route != sandbox.RoutePayments || seen[0].APIKey != e.a.APIKey || seen[0].Status != 0 {
				t.Errorf("hook saw %+v", seen)
			}
			// removing the hook restores normal service
			e.sb.SetFaults(nil)
			if r := e.get(t, "/api/v1/payments?limit=1", &e.a); r.status != 200 {
				t.Errorf("after SetFaults(nil): %d", r.status)
			}
		})
	}
}

// Faults are decided per request: only the matching route fails.
func TestFaultsSelective(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sandbox.Options{})
	e.sb.SetFaults(func(c sandbox.Call) sandbox.Fault {
		if c.Route == sandbox.RoutePayment {
			return sandbox.Fault503
		}
		return sandbox.FaultNone
	})
	pay := e.sb.Payments(e.a.APIKey)[0].ID
	if r := e.get(t, "/api/v1/payments", &e.a); r.status != 200 {
		t.Errorf("list: %d", r.status)
	}
	// fault comes before auth: even without credentials
	wantError(t, e.get(t, "/api/v1/payments/"+pay, nil), 503, "Service unavailable")
}

func TestRandomFaults(t *testing.T) {
	t.Parallel()
	seq := func(f func(sandbox.Call) sandbox.Fault, n int) []sandbox.Fault {
		out := make([]sandbox.Fault, n)
		for i := range out {
			out[i] = f(sandbox.Call{})
		}
		return out
	}
	if s := seq(sandbox.RandomFaults(1, 0), 200); slices.ContainsFunc(s, func(f sandbox.Fault) bool { return f != sandbox.FaultNone }) {
		t.Error("rate 0 injected faults")
	}
	s := seq(sandbox.RandomFaults(1, 1, sandbox.FaultBadJSON, sandbox.Fault502), 200)
	kinds := map[sandbox.Fault]int{}
	for _, f := range s {
		kinds[f]++
	}
	if len(kinds) != 2 || kinds[sandbox.FaultBadJSON] == 0 || kinds[sandbox.Fault502] == 0 {
		t.Errorf("rate 1 kinds %v", kinds)
	}
	a, b := seq(sandbox.RandomFaults(7, 0.3), 500), seq(sandbox.RandomFaults(7, 0.3), 500)
	if !slices.Equal(a, b) {
		t.Error("same seed, different sequence")
	}
	n := 0
	for _, f := range a {
		if f != sandbox.FaultNone {
			n++
			if !slices.Contains([]sandbox.Fault{sandbox.Fault500, sandbox.Fault502, sandbox.Fault503, sandbox.Fault429}, f) {
				t.Errorf("default kinds produced %v", f)
			}
		}
	}
	if n < 100 || n > 200 {
		t.Errorf("rate 0.3 gave %d/500", n)
	}

	// soak: concurrent requests through a random fault hook
	e := newEnv(t, sandbox.Options{})
	e.sb.SetFaults(sandbox.RandomFaults(3, 0.5, sandbox.Fault500, sandbox.Fault429))
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[int]int{}
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				req, _ := http.NewRequest(http.MethodGet, e.ts.URL+"/api/v1/payments?limit=5", nil)
				req.Header.Set("x-api-key", e.a.APIKey)
				req.Header.Set("x-api-secret", e.a.APISecret)
				res, err := e.client.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				mu.Lock()
				statuses[res.StatusCode]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if statuses[200] == 0 || statuses[500] == 0 || statuses[429] == 0 || len(statuses) != 3 {
		t.Errorf("statuses %v", statuses)
	}
	if e.sb.CallCount(sandbox.RoutePayments) != 200 {
		t.Errorf("count %d", e.sb.CallCount(sandbox.RoutePayments))
	}
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sandbox.Options{})
	want := string(e.get(t, "/api/v1/payments?limit=50", &e.a).body)
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 30; i++ {
				switch i % 4 {
				case 0:
					req, _ := http.NewRequest(http.MethodGet, e.ts.URL+"/api/v1/payments?limit=50", nil)
					req.Header.Set("x-api-key", e.a.APIKey)
					req.Header.Set("x-api-secret", e.a.APISecret)
					res, err := e.client.Do(req)
					if err != nil {
						t.Error(err)
						return
					}
					body, _ := io.ReadAll(res.Body)
					res.Body.Close()
					if string(body) != want {
						t.Error("concurrent body differs")
					}
				case 1:
					_ = e.sb.Calls()
				case 2:
					_ = e.sb.CallCount(sandbox.RoutePayments)
					e.sb.SetLatency(0)
				case 3:
					e.sb.SetFaults(nil)
					_ = e.sb.Payments(e.b.APIKey)
				}
			}
		}()
	}
	wg.Wait()
	if n := e.sb.CallCount(""); n != 1+16*8 {
		t.Errorf("call count %d", n)
	}
}

func BenchmarkListDirect(b *testing.B) {
	sb := sandbox.New(sandbox.Options{})
	biz := sb.Businesses()[0]
	req := httptest.NewRequest(http.MethodGet, "/api/v1/payments?limit=20&status=SUCCEEDED", nil)
	req.Header.Set("x-api-key", biz.APIKey)
	req.Header.Set("x-api-secret", biz.APISecret)
	for b.Loop() {
		w := httptest.NewRecorder()
		sb.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatal(w.Code)
		}
	}
}

func BenchmarkPaymentDirect(b *testing.B) {
	sb := sandbox.New(sandbox.Options{})
	biz := sb.Businesses()[0]
	id := sb.Payments(biz.APIKey)[10].ID
	req := httptest.NewRequest(http.MethodGet, "/api/v1/payments/"+id, nil)
	req.Header.Set("x-api-key", biz.APIKey)
	req.Header.Set("x-api-secret", biz.APISecret)
	for b.Loop() {
		w := httptest.NewRecorder()
		sb.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatal(w.Code)
		}
	}
}
