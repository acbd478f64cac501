package restclient

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

const okPayment = `{"id":"pay_x","status":"SUCCEEDED","amount":19.99,"currency":"BDT","customer":{"name":"A"},
	"created_at":"2026-11-21T09:30:00.000Z","updated_at":"2026-11-21T09:30:00.000Z"}`

// scriptedServer is a counting test server that plays a script until it
// is healed, and then answers every call with okPayment.
type scriptedServer struct {
	*testServer
	healed atomic.Bool
}

// scripted answers the nth call with script[n] (the last one repeats):
// a status with a body, "drop" to close the connection unanswered, "half"
// to close it in the middle of a 200 body, or "notjson" for a 200 whose
// body is not JSON.
func scripted(t *testing.T, script ...string) *scriptedServer {
	return scriptedOn(t, newTestServer, script...)
}

// scriptedOn is scripted on a server made by serve (newTestServer or
// newMemServer).
func scriptedOn(t *testing.T, serve func(*testing.T, http.HandlerFunc) *testServer, script ...string) *scriptedServer {
	var n atomic.Int64
	s := &scriptedServer{}
	s.testServer = serve(t, func(w http.ResponseWriter, r *http.Request) {
		step := script[min(int(n.Add(1))-1, len(script)-1)]
		if s.healed.Load() {
			step = "200"
		}
		switch step {
		case "drop":
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		case "half":
			conn, buf, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{\"id\":\"pay_")
				_ = buf.Flush()
				conn.Close()
			}
		case "notjson":
			_, _ = w.Write([]byte("<html>oops</html>"))
		case "200":
			_, _ = w.Write([]byte(okPayment))
		case "429":
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(429)
			_, _ = w.Write([]byte(`{"error":"Too many requests"}`))
		default:
			var code int
			for _, c := range step {
				code = code*10 + int(c-'0')
			}
			w.WriteHeader(code)
			_, _ = w.Write([]byte(`{"error":"status ` + step + `"}`))
		}
	})
	return s
}

// wantHealthy checks that a normal call through c answers correctly.
func wantHealthy(t *testing.T, c *Client) {
	t.Helper()
	if p, err := c.GetPayment(credCtx(), "pay_x"); err != nil || p.ID != "pay_x" || p.Amount != 1999 {
		t.Fatalf("normal call after the fault: %+v, %v", p, err)
	}
}

func TestRetries(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		script    []string
		wantKind  ErrorKind // -1: success
		wantCalls int64
	}{
		{"500 is not retried", []string{"500", "200"}, KindUpstream, 1},
		{"502 then 200", []string{"502", "200"}, -1, 2},
		{"503, 503, 200", []string{"503", "503", "200"}, -1, 3},
		{"504 three times", []string{"504"}, KindTimeout, 3},
		{"503 three times", []string{"503"}, KindUpstream, 3},
		{"429 is reported, not retried", []string{"429", "200"}, KindRateLimited, 1},
		{"404", []string{"404", "200"}, KindNotFound, 1},
		{"401", []string{"401", "200"}, KindUnauthorized, 1},
		{"403", []string{"403", "200"}, KindForbidden, 1},
		{"400", []string{"400", "200"}, KindBadRequest, 1},
		{"dropped connection then 200", []string{"drop", "200"}, -1, 2},
		{"connection dropped mid-body then 200", []string{"half", "200"}, -1, 2},
		{"dropped three times", []string{"drop"}, KindUpstream, 3},
		{"200 that is not JSON is not retried", []string{"notjson", "200"}, KindUpstream, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := scripted(t, tc.script...)
			// The gateway's defaults (2 retries, a threshold of 5): one
			// faulty call must not open the breaker.
			c := newClient(t, Config{BaseURL: srv.URL, Resilience: Resilience{MaxRetries: 2, RetryBaseDelay: time.Millisecond, BreakerFailures: 5}})
			p, err := c.GetPayment(credCtx(), "pay_x")
			if tc.wantKind < 0 {
				if err != nil || p.Amount != 1999 {
					t.Fatalf("got %+v, %v", p, err)
				}
			} else if KindOf(err) != tc.wantKind {
				t.Fatalf("err = %v (kind %v), want kind %v", err, KindOf(err), tc.wantKind)
			}
			if tc.wantKind == KindRateLimited && err.(*Error).RetryAfter != 7*time.Second {
				t.Errorf("RetryAfter = %v", err.(*Error).RetryAfter)
			}
			if n := srv.calls.Load(); n != tc.wantCalls {
				t.Errorf("%d calls, want %d", n, tc.wantCalls)
			}
			srv.healed.Store(true)
			wantHealthy(t, c)
			if c.BreakerState().String() != "closed" {
				t.Errorf("breaker %s after one faulty call", c.BreakerState().String())
			}
		})
	}
}

func TestHangIsNotRetried(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const timeout = 100 * time.Millisecond
		var healed atomic.Bool
		srv := newMemServer(t, func(w http.ResponseWriter, r *http.Request) {
			if healed.Load() {
				_, _ = w.Write([]byte(okPayment))
				return
			}
			<-r.Context().Done()
		})
		c := newClient(t, Config{BaseURL: srv.URL, HTTPClient: srv.hc, Timeout: timeout, Resilience: Resilience{MaxRetries: 2, RetryBaseDelay: time.Millisecond, BreakerFailures: 5}})
		start := time.Now()
		_, err := c.GetPayment(credCtx(), "pay_x")
		// On the bubble's clock the hang costs exactly the timeout: one
		// attempt, no retry's backoff or second attempt after it.
		if took := time.Since(start); KindOf(err) != KindTimeout || took != timeout || srv.calls.Load() != 1 {
			t.Fatalf("err %v after %v and %d calls; want a timeout after %v and one call", err, took, srv.calls.Load(), timeout)
		}
		healed.Store(true)
		wantHealthy(t, c)
	})
}

func TestRetriesStayWithinTheDeadline(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const deadline = 30 * time.Millisecond
		srv := scriptedOn(t, newMemServer, "503")
		c := newClient(t, Config{BaseURL: srv.URL, HTTPClient: srv.hc, Resilience: Resilience{MaxRetries: 2, RetryBaseDelay: time.Second}})
		ctx, cancel := context.WithTimeout(credCtx(), deadline)
		defer cancel()
		start := time.Now()
		_, err := c.GetPayment(ctx, "pay_x")
		// On the bubble's clock: a backoff that does not fit in what is
		// left is not waited for at all (the call gives up at once), one
		// that fits is waited for, never past the caller's deadline.
		if took := time.Since(start); err == nil || took > deadline {
			t.Fatalf("err %v after %v; want an error within the caller's %v", err, took, deadline)
		}
		// A backoff drawn from (0, 1s] almost never fits in the 30ms left: one
		// call (two when the draw is below ~30ms, about 3% of runs).
		if n := srv.calls.Load(); n > 2 {
			t.Errorf("%d calls", n)
		}
		srv.healed.Store(true)
		wantHealthy(t, c)
	})
}

func TestCancelledCallerIsNotRetried(t *testing.T) {
	t.Parallel()
	var srv *testServer
	ctx, cancel := context.WithCancel(credCtx())
	srv = newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		cancel()
		w.WriteHeader(503)
	})
	c := newClient(t, Config{BaseURL: srv.URL, Resilience: Resilience{MaxRetries: 2, RetryBaseDelay: 20 * time.Millisecond}})
	_, err := c.GetPayment(ctx, "pay_x")
	if err == nil || srv.calls.Load() != 1 {
		t.Fatalf("err %v, %d calls", err, srv.calls.Load())
	}
}

type transitions struct {
	mu  sync.Mutex
	got []string
}

func (tr *transitions) record(from, to CircuitState) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.got = append(tr.got, from.String()+">"+to.String())
}

// recordMerchant records a merchant's changes (all of one merchant here).
func (tr *transitions) recordMerchant(_ string, from, to CircuitState) { tr.record(from, to) }

func (tr *transitions) list() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.got...)
}

// unhealthyUntil answers 503 until healthy is set, then a payment; each
// request first runs before, if any.
func unhealthyUntil(healthy *atomic.Bool, before func()) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if before != nil {
			before()
		}
		if !healthy.Load() {
			w.WriteHeader(503)
			return
		}
		_, _ = w.Write([]byte(okPayment))
	}
}

// TestBreakerOpensFailsFastAndRecovers: one merchant's failing calls open
// its own circuit (the process-wide one stays closed: one merchant's
// failures prove nothing about the REST API as a whole, see
// TestBreakerIsolation), which fails fast and recovers after a good probe.
func TestBreakerOpensFailsFastAndRecovers(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var healthy atomic.Bool
		srv := newMemServer(t, unhealthyUntil(&healthy, nil))
		var tr, process transitions
		c := newClient(t, Config{BaseURL: srv.URL, HTTPClient: srv.hc, Resilience: Resilience{
			BreakerFailures: 3, BreakerCooldown: 100 * time.Millisecond,
			OnBreakerChange: process.record, OnMerchantBreakerChange: tr.recordMerchant}})
		for range 3 {
			if _, err := c.GetPayment(credCtx(), "pay_x"); KindOf(err) != KindUpstream {
				t.Fatalf("err %v", err)
			}
		}
		if s := c.merchantState(credCtx()); s != "open" {
			t.Fatalf("merchant state %s after 3 failures", s)
		}
		before := srv.calls.Load()
		_, err := c.GetPayment(credCtx(), "pay_x")
		if KindOf(err) != KindUpstream || err.(*Error).Message != msgMerchantCircuitOpen || srv.calls.Load() != before {
			t.Fatalf("while open: err %v, %d new calls", err, srv.calls.Load()-before)
		}

		healthy.Store(true)
		time.Sleep(100*time.Millisecond + 1) // the bubble's clock: just past the cooldown
		if p, err := c.GetPayment(credCtx(), "pay_x"); err != nil || p.ID != "pay_x" {
			t.Fatalf("probe: %v", err)
		}
		if s := c.merchantState(credCtx()); s != "closed" {
			t.Fatalf("merchant state %s after a good probe", s)
		}
		if _, err := c.GetPayment(credCtx(), "pay_x"); err != nil {
			t.Fatalf("after recovery: %v", err)
		}
		want := "closed>open open>half-open half-open>closed"
		if got := strings.Join(tr.list(), " "); got != want {
			t.Errorf("merchant transitions %q, want %q", got, want)
		}
		if got := process.list(); len(got) != 0 || c.BreakerState().String() != "closed" {
			t.Errorf("process-wide circuit %s, transitions %v", c.BreakerState().String(), got)
		}
	})
}

func TestBreakerOnConnectionRefused(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		// Refused as a dial to a closed port is, until the REST API is back.
		var up atomic.Bool
		rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if !up.Load() {
				return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
			}
			return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(okPayment)), Request: r}, nil
		})
		const cooldown = 50 * time.Millisecond
		c := newClient(t, Config{BaseURL: "http://rest.test", HTTPClient: &http.Client{Transport: rt}, Resilience: Resilience{
			MaxRetries: 2, RetryBaseDelay: time.Millisecond, BreakerFailures: 2, BreakerCooldown: cooldown}})
		for range 2 {
			if _, err := c.GetPayment(credCtx(), "pay_x"); KindOf(err) != KindUpstream {
				t.Fatalf("err %v", err)
			}
		}
		if c.BreakerState().String() != "open" {
			t.Fatalf("state %s", c.BreakerState().String())
		}
		up.Store(true) // the REST API comes back
		if _, err := c.GetPayment(credCtx(), "pay_x"); err == nil {
			t.Fatal("a call went through the open circuit before the cooldown")
		}
		time.Sleep(cooldown + 1)
		if _, err := c.GetPayment(credCtx(), "pay_x"); err != nil {
			t.Fatalf("after recovery: %v", err)
		}
		if c.BreakerState().String() != "closed" {
			t.Fatalf("state %s", c.BreakerState().String())
		}
	})
}

func TestCallerErrorsNeverOpenTheBreaker(t *testing.T) {
	t.Parallel()
	srv := scripted(t, "404")
	c := newClient(t, Config{BaseURL: srv.URL, Resilience: Resilience{BreakerFailures: 2}})
	for range 10 {
		if _, err := c.GetPayment(credCtx(), "pay_x"); KindOf(err) != KindNotFound {
			t.Fatalf("err %v", err)
		}
	}
	ctx, cancel := context.WithCancel(credCtx())
	cancel()
	for range 5 {
		_, _ = c.GetPayment(ctx, "pay_x")
	}
	if c.BreakerState().String() != "closed" {
		t.Fatalf("state %s after caller errors", c.BreakerState().String())
	}
}

func TestHalfOpenLetsOneProbeThrough(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var healthy atomic.Bool
		probing := make(chan struct{})
		release := make(chan struct{})
		var hold atomic.Bool
		srv := newMemServer(t, unhealthyUntil(&healthy, func() {
			if hold.Load() {
				close(probing)
				<-release
			}
		}))
		// The merchant's own circuit (one merchant's failures leave the
		// process-wide one closed; TestProcessBreakerHalfOpen does the same
		// with it).
		var tr transitions
		c := newClient(t, Config{BaseURL: srv.URL, HTTPClient: srv.hc, Resilience: Resilience{
			MaxRetries: 2, RetryBaseDelay: time.Millisecond, BreakerFailures: 2, BreakerCooldown: 50 * time.Millisecond, OnMerchantBreakerChange: tr.recordMerchant}})

		// Two failed calls, each retried twice, open the circuit.
		for range 2 {
			if _, err := c.GetPayment(credCtx(), "pay_x"); KindOf(err) != KindUpstream {
				t.Fatalf("err %v", err)
			}
		}
		if n, s := srv.calls.Load(), c.merchantState(credCtx()); n != 6 || s != "open" {
			t.Fatalf("%d calls, state %s", n, s)
		}

		// After the cooldown a failing probe is one request, and reopens.
		time.Sleep(80 * time.Millisecond)
		if s := c.merchantState(credCtx()); s != "half-open" {
			t.Fatalf("state %s after the cooldown", s)
		}
		if _, err := c.GetPayment(credCtx(), "pay_x"); KindOf(err) != KindUpstream || err.(*Error).Status != 503 {
			t.Fatalf("probe: %v", err)
		}
		if n, s := srv.calls.Load(), c.merchantState(credCtx()); n != 7 || s != "open" {
			t.Fatalf("after a failed probe: %d calls, state %s", n, s)
		}

		// While a probe is in flight, other calls fail fast.
		time.Sleep(80 * time.Millisecond)
		healthy.Store(true)
		hold.Store(true)
		probeErr := make(chan error, 1)
		go func() {
			_, err := c.GetPayment(credCtx(), "pay_x")
			probeErr <- err
		}()
		<-probing
		hold.Store(false)
		_, err := c.GetPayment(credCtx(), "pay_y") // another call: pay_x's would wait for the probe's answer
		if e, ok := err.(*Error); !ok || e.Message != msgMerchantCircuitOpen {
			t.Errorf("during the probe: %v", err)
		}
		if n := srv.calls.Load(); n != 8 {
			t.Errorf("%d calls during the probe, want 8", n)
		}
		close(release)
		if err := <-probeErr; err != nil {
			t.Fatalf("probe: %v", err)
		}
		if s := c.merchantState(credCtx()); s != "closed" {
			t.Fatalf("state %s after a good probe", s)
		}
		wantHealthy(t, c)

		want := "closed>open open>half-open half-open>open open>half-open half-open>closed"
		if got := strings.Join(tr.list(), " "); got != want {
			t.Errorf("transitions %q, want %q", got, want)
		}
	})
}

func TestCallerDeadlinesNeverOpenTheBreaker(t *testing.T) {
	t.Parallel()
	srv := hangingServer(t)
	c := newClient(t, Config{BaseURL: srv.URL, Timeout: 5 * time.Second, Resilience: Resilience{BreakerFailures: 1}})
	// The caller's own deadline passes while the REST API is slow.
	for range 3 {
		ctx, cancel := context.WithTimeout(credCtx(), 20*time.Millisecond)
		_, err := c.GetPayment(ctx, "pay_x")
		cancel()
		if KindOf(err) != KindTimeout {
			t.Fatalf("err %v", err)
		}
	}
	// A caller already past its deadline makes no request.
	ctx, cancel := context.WithDeadline(credCtx(), time.Now().Add(-time.Second))
	defer cancel()
	before := srv.calls.Load()
	if _, err := c.GetPayment(ctx, "pay_x"); KindOf(err) != KindTimeout || srv.calls.Load() != before {
		t.Fatalf("expired caller: %v", err)
	}
	if s := c.BreakerState().String(); s != "closed" {
		t.Fatalf("state %s after callers' deadlines", s)
	}

	if s := c.merchantState(credCtx()); s != "none" {
		t.Fatalf("merchant circuit %s after callers' deadlines", s)
	}

	// Our own per-call timeout does count (for the merchant: a REST API
	// that hangs on one merchant's ids is that merchant's trouble).
	c2 := newClient(t, Config{BaseURL: srv.URL, Timeout: 20 * time.Millisecond, Resilience: Resilience{BreakerFailures: 1}})
	if _, err := c2.GetPayment(credCtx(), "pay_x"); KindOf(err) != KindTimeout {
		t.Fatalf("err %v", err)
	}
	if s := c2.merchantState(credCtx()); s != "open" {
		t.Fatalf("merchant state %s after a per-call timeout", s)
	}
}

func TestBreakerHookMayReadTheState(t *testing.T) {
	t.Parallel()
	// Nothing listens: a systemic failure, which opens the process-wide
	// circuit at once.
	var c *Client
	var seen []string
	var mu sync.Mutex
	c = newClient(t, Config{BaseURL: "http://" + closedAddr(t), Resilience: Resilience{
		BreakerFailures: 1, BreakerCooldown: time.Hour,
		OnBreakerChange: func(from, to CircuitState) {
			s := c.BreakerState().String() // would deadlock if called under the breaker's lock
			mu.Lock()
			seen = append(seen, from.String()+">"+to.String()+"="+s)
			mu.Unlock()
		}}})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = c.GetPayment(credCtx(), "pay_x")
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a hook that reads the state deadlocked")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[0] != "closed>open=open" {
		t.Errorf("hook saw %v", seen)
	}
}

// TestResilienceZeroValues: a zero count is none (no retries, no
// circuits), as in the gateway's settings; a zero delay takes its
// constant.
func TestResilienceZeroValues(t *testing.T) {
	t.Parallel()
	if p := (Resilience{}).retryPolicy(); p.max != 0 || p.base != 50*time.Millisecond || p.cap != time.Second {
		t.Errorf("zero Resilience: %+v", p)
	}
	if p := (Resilience{MaxRetries: -1}).retryPolicy(); p.max != 0 {
		t.Errorf("MaxRetries -1: %d retries", p.max)
	}
	if b := (Resilience{}).newBreaker("x"); b != nil {
		t.Error("BreakerFailures 0 still made a breaker")
	}
	p := Resilience{MaxRetries: 2}.retryPolicy()
	if p.max != 2 {
		t.Errorf("MaxRetries 2: %d retries", p.max)
	}
	c := newClient(t, Config{BaseURL: "http://127.0.0.1:1"})
	if s := c.BreakerState().String(); s != "closed" {
		t.Errorf("no breaker: state %s", s)
	}
	for n := range 100 { // large n must neither overflow nor panic
		limit := min(p.base<<min(n, 10), p.cap)
		for range 20 {
			if d := p.backoff(n); d <= 0 || d > limit {
				t.Fatalf("backoff(%d) = %v, want (0, %v]", n, d, limit)
			}
		}
	}
}
