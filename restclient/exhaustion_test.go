package restclient

// Local exhaustion (issue 21): this process running out of file
// descriptors or ports is not the REST API failing, and opens no circuit.

import (
	"context"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func TestLocalExhaustionOpensNoCircuit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		errno syscall.Errno
	}{
		{"EMFILE", syscall.EMFILE},
		{"ENFILE", syscall.ENFILE},
		{"EADDRNOTAVAIL", syscall.EADDRNOTAVAIL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var exhausted atomic.Bool
			exhausted.Store(true)
			var served atomic.Int64
			tr := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				if exhausted.Load() {
					// What a dial gets when the process is out of them.
					return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("socket", tc.errno)}
				}
				served.Add(1)
				return http.DefaultTransport.RoundTrip(r)
			})
			srv := scripted(t, "200")
			c := newClient(t, Config{BaseURL: srv.URL, HTTPClient: &http.Client{Transport: tr},
				Resilience: Resilience{BreakerFailures: 2, BreakerCooldown: time.Hour}})
			merchants := []context.Context{merchantCtx("a"), merchantCtx("b"), merchantCtx("c"), merchantCtx("d")}
			// Every merchant known to the REST API first (trusted), so that
			// its failures would count towards the process-wide circuit.
			exhausted.Store(false)
			for _, ctx := range merchants {
				if _, err := c.GetPayment(ctx, "pay_x"); err != nil {
					t.Fatalf("before: %v", err)
				}
			}
			exhausted.Store(true)
			for range 5 {
				for _, ctx := range merchants[:3] {
					if _, err := c.GetPayment(ctx, "pay_x"); err == nil {
						t.Fatal("a call succeeded without a socket")
					}
				}
			}
			if s := c.BreakerState().String(); s != "closed" {
				t.Errorf("process-wide circuit %s after local exhaustion, want closed", s)
			}
			for _, ctx := range merchants[:3] {
				if s := c.merchantState(ctx); s == "open" {
					t.Errorf("a merchant's circuit is open after local exhaustion")
				}
			}
			exhausted.Store(false)
			before := served.Load()
			if _, err := c.GetPayment(merchants[3], "pay_x"); err != nil {
				t.Errorf("another merchant after local exhaustion: %v", err)
			}
			if served.Load() != before+1 {
				t.Error("the other merchant's call did not reach the REST API")
			}
		})
	}
}
