package restclient

// The circuits' states as withResilience reads them: closed from the
// mirror their changes keep (breaker.notClosed, merchant.notClosed),
// anything else from gobreaker itself, so that a probe made after the
// cooldown with nobody having read the state since it opened is still
// one request.

import (
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func TestProbeWithoutStateRead(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		process bool // the process-wide circuit (three merchants' failures), else one merchant's
	}{
		{"a merchant's circuit", false},
		{"the process-wide circuit", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) { mirrorProbe(t, tc.process) })
		})
	}
}

// mirrorProbe runs TestProbeWithoutStateRead's case inside a synctest
// bubble: the cooldowns pass on its fake clock.
func mirrorProbe(t *testing.T, process bool) {
	srv := merchantServerOn(t, newMemServer, "", "A", "B", "C")
	c := newClient(t, Config{BaseURL: srv.URL, HTTPClient: srv.hc, Resilience: Resilience{
		MaxRetries: 2, RetryBaseDelay: time.Millisecond, BreakerFailures: 3, BreakerCooldown: 50 * time.Millisecond}})
	merchants := []string{"A", "A", "A"}
	if process {
		merchants = []string{"A", "B", "C"}
		for _, m := range merchants { // accepted: their failures count for the process
			if _, err := c.GetPayment(merchantCtx(m), "pay_ok"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if c.breaker.notClosed.Load() {
		t.Fatal("the process-wide mirror says not closed before any failure")
	}
	srv.setOutage("503")
	for _, m := range merchants {
		if _, err := c.GetPayment(merchantCtx(m), "pay_ok"); KindOf(err) != KindUpstream {
			t.Fatal(err)
		}
	}
	cv, _ := credentialsFrom(merchantCtx("A"))
	m := c.breaker.merchants.get(cv.merchant.short(), time.Now().UnixNano())
	if process && !c.breaker.notClosed.Load() || !process && (m == nil || !m.notClosed.Load()) {
		t.Fatal("the mirror says closed after the circuit opened")
	}
	before := srv.calls.Load()
	time.Sleep(80 * time.Millisecond) // the cooldown: half-open at the next look, which is the call's
	if _, err := c.GetPayment(merchantCtx("A"), "pay_ok"); KindOf(err) != KindUpstream {
		t.Fatalf("probe: %v", err)
	}
	if n := srv.calls.Load() - before; n != 1 {
		t.Errorf("the probe made %d requests, want 1 (no retries)", n)
	}
	time.Sleep(80 * time.Millisecond)
	srv.setOutage("")
	if _, err := c.GetPayment(merchantCtx("A"), "pay_ok"); err != nil {
		t.Fatalf("good probe: %v", err)
	}
	if c.breaker.notClosed.Load() || m.notClosed.Load() {
		t.Error("the mirror says not closed after a good probe closed the circuit")
	}
}

// TestClosedCircuitRetries: with both circuits closed a call is retried
// as configured (the mirror's closed needs no look at the states).
func TestClosedCircuitRetries(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	srv := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte(paymentBody))
	})
	c := newClient(t, Config{BaseURL: srv.URL, Resilience: Resilience{MaxRetries: 2, RetryBaseDelay: time.Millisecond, BreakerFailures: 5}})
	if _, err := c.GetPayment(credCtx(), "pay_prod_0123456789abcdef0123456789abcdef"); err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("%d requests, want 3 (two retries)", n)
	}
}
