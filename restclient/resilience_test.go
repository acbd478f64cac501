package restclient

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const okPayment = `{"id":"pay_x","status":"SUCCEEDED","amount":19.99,"currency":"BDT","customer":{"name":"A"},
	"created_at":"2026-11-21T09:30:00.000Z","updated_at":"2026-11-21T09:30:00.000Z"}`

// scripted answers the nth call with script[n] (the last one repeats):
// a status with a body, or "drop" to close the connection unanswered.
func scripted(t *testing.T, script ...string) *testServer {
	var n atomic.Int64
	return newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		step := script[min(int(n.Add(1))-1, len(script)-1)]
		switch step {
		case "drop":
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
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
}

func fastRetries() Resilience {
	return Resilience{RetryBaseDelay: time.Millisecond, BreakerFailures: -1}
}

func TestRetries(t *testing.T) {
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := scripted(t, tc.script...)
			c := newClient(t, Config{BaseURL: srv.URL, Resilience: fastRetries()})
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
		})
	}
}

func TestHangIsNotRetried(t *testing.T) {
	release := make(chan struct{})
	srv := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	c := newClient(t, Config{BaseURL: srv.URL, Timeout: 100 * time.Millisecond, Resilience: fastRetries()})
	start := time.Now()
	_, err := c.GetPayment(credCtx(), "pay_x")
	if KindOf(err) != KindTimeout || time.Since(start) > time.Second || srv.calls.Load() != 1 {
		t.Fatalf("err %v after %v and %d calls", err, time.Since(start), srv.calls.Load())
	}
}

func TestRetriesStayWithinTheDeadline(t *testing.T) {
	srv := scripted(t, "503")
	c := newClient(t, Config{BaseURL: srv.URL, Resilience: Resilience{RetryBaseDelay: time.Second, BreakerFailures: -1}})
	ctx, cancel := context.WithTimeout(credCtx(), 30*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.GetPayment(ctx, "pay_x")
	if err == nil || time.Since(start) > 500*time.Millisecond {
		t.Fatalf("err %v after %v", err, time.Since(start))
	}
	// A backoff of up to 1s cannot fit in 30ms: no second call.
	if n := srv.calls.Load(); n > 2 {
		t.Errorf("%d calls", n)
	}
}

func TestCancelledCallerIsNotRetried(t *testing.T) {
	var srv *testServer
	ctx, cancel := context.WithCancel(credCtx())
	srv = newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		cancel()
		w.WriteHeader(503)
	})
	c := newClient(t, Config{BaseURL: srv.URL, Resilience: Resilience{RetryBaseDelay: 20 * time.Millisecond, BreakerFailures: -1}})
	_, err := c.GetPayment(ctx, "pay_x")
	if err == nil || srv.calls.Load() != 1 {
		t.Fatalf("err %v, %d calls", err, srv.calls.Load())
	}
}

type transitions struct {
	mu  sync.Mutex
	got []string
}

func (tr *transitions) record(from, to string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.got = append(tr.got, from+">"+to)
}

func (tr *transitions) list() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.got...)
}

func TestBreakerOpensFailsFastAndRecovers(t *testing.T) {
	var healthy atomic.Bool
	srv := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		if !healthy.Load() {
			w.WriteHeader(503)
			return
		}
		_, _ = w.Write([]byte(okPayment))
	})
	var tr transitions
	c := newClient(t, Config{BaseURL: srv.URL, Resilience: Resilience{
		MaxRetries: -1, BreakerFailures: 3, BreakerCooldown: 100 * time.Millisecond, OnBreakerChange: tr.record}})
	for range 3 {
		if _, err := c.GetPayment(credCtx(), "pay_x"); KindOf(err) != KindUpstream {
			t.Fatalf("err %v", err)
		}
	}
	if c.BreakerState() != "open" {
		t.Fatalf("state %s after 3 failures", c.BreakerState())
	}
	before := srv.calls.Load()
	_, err := c.GetPayment(credCtx(), "pay_x")
	if KindOf(err) != KindUpstream || err.(*Error).Message != "REST API unavailable (circuit open); retry shortly" || srv.calls.Load() != before {
		t.Fatalf("while open: err %v, %d new calls", err, srv.calls.Load()-before)
	}

	healthy.Store(true)
	time.Sleep(150 * time.Millisecond)
	if p, err := c.GetPayment(credCtx(), "pay_x"); err != nil || p.ID != "pay_x" {
		t.Fatalf("probe: %v", err)
	}
	if c.BreakerState() != "closed" {
		t.Fatalf("state %s after a good probe", c.BreakerState())
	}
	if _, err := c.GetPayment(credCtx(), "pay_x"); err != nil {
		t.Fatalf("after recovery: %v", err)
	}
	want := []string{"closed>open", "open>half-open", "half-open>closed"}
	if got := tr.list(); len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("transitions %v, want %v", got, want)
	}
}

func TestBreakerOnConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	c := newClient(t, Config{BaseURL: "http://" + addr, Resilience: Resilience{
		RetryBaseDelay: time.Millisecond, BreakerFailures: 2, BreakerCooldown: 50 * time.Millisecond}})
	for range 2 {
		if _, err := c.GetPayment(credCtx(), "pay_x"); KindOf(err) != KindUpstream {
			t.Fatalf("err %v", err)
		}
	}
	if c.BreakerState() != "open" {
		t.Fatalf("state %s", c.BreakerState())
	}
	// The REST API comes back on the same address.
	ln2, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("address taken meanwhile: %v", err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(okPayment)) })}
	go func() { _ = srv.Serve(ln2) }()
	defer srv.Close()
	time.Sleep(80 * time.Millisecond)
	if _, err := c.GetPayment(credCtx(), "pay_x"); err != nil {
		t.Fatalf("after recovery: %v", err)
	}
	if c.BreakerState() != "closed" {
		t.Fatalf("state %s", c.BreakerState())
	}
}

func TestCallerErrorsNeverOpenTheBreaker(t *testing.T) {
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
	if c.BreakerState() != "closed" {
		t.Fatalf("state %s after caller errors", c.BreakerState())
	}
}
