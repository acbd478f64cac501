package restclient

// The deadline of the calls of one operation: every call gets the
// timeout from its start, a hung call is cut at it with the timeout's
// error, its caller's cancellation still reaches it, and the circuits
// count it.

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// opCtx is credCtx as the gateway's operations make their calls: with the
// operation's CallLog.
func opCtx() context.Context { return WithCallLog(credCtx(), new(CallLog)) }

// callRecorder is a RoundTripper that remembers, of each request, when it
// got it and its context's deadline.
type callRecorder struct {
	mu    sync.Mutex
	calls []recordedCall
	next  http.RoundTripper
}

type recordedCall struct{ at, deadline time.Time }

func (r *callRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	at := time.Now()
	d, _ := req.Context().Deadline()
	r.mu.Lock()
	r.calls = append(r.calls, recordedCall{at: at, deadline: d})
	r.mu.Unlock()
	return r.next.RoundTrip(req)
}

func (r *callRecorder) recorded() []recordedCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]recordedCall(nil), r.calls...)
}

// TestCallDeadlineCutsHungCalls: the calls of a fan-out that hang are
// cut at the timeout; a wave started when the first has been cut gets
// the whole timeout again.
func TestCallDeadlineCutsHungCalls(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const timeout = 300 * time.Millisecond
		srv := memHangingServer(t)
		rec := &callRecorder{next: srv.hc.Transport}
		c := newClient(t, Config{BaseURL: srv.URL, Timeout: timeout, HTTPClient: &http.Client{Transport: rec}})
		ctx := WithRequestLimit(opCtx(), 2) // two waves of two calls
		start := time.Now()
		results := c.GetPayments(ctx, []string{"pay_1", "pay_2", "pay_3", "pay_4"})
		elapsed := time.Since(start)
		for i, r := range results {
			var e *Error
			if !errors.As(r.Err, &e) || e.Kind != KindTimeout || e.Message != "REST API did not answer within 300ms" {
				t.Errorf("result %d: %v; want KindTimeout at the call's timeout", i, r.Err)
			}
		}
		calls := rec.recorded()
		if len(calls) != 4 {
			t.Fatalf("%d requests; want 4", len(calls))
		}
		for i, call := range calls {
			// On the bubble's clock the call starts when the transport sees
			// it: the lower bound fails if a wave shares the other's deadline.
			if got := call.deadline.Sub(call.at); got != timeout {
				t.Errorf("request %d: deadline %v after it reached the transport; want the timeout %v", i, got, timeout)
			}
		}
		if elapsed != 2*timeout {
			t.Errorf("two waves took %v; want each cut at the timeout (%v)", elapsed, timeout)
		}
		if srv.calls.Load() != 4 {
			t.Errorf("server got %d calls; want 4", srv.calls.Load())
		}
	})
}

// TestCallDeadlineCallerCancel: the call's context is the operation's
// child, so the caller's cancellation still ends hung calls at once.
func TestCallDeadlineCallerCancel(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		srv := memHangingServer(t)
		rec := &callRecorder{next: srv.hc.Transport}
		c := newClient(t, Config{BaseURL: srv.URL, Timeout: 10 * time.Second, HTTPClient: &http.Client{Transport: rec}})
		ctx, cancel := context.WithCancel(opCtx())
		const cancelAfter = 100 * time.Millisecond
		time.AfterFunc(cancelAfter, cancel)
		start := time.Now()
		results := c.GetPayments(ctx, []string{"pay_1", "pay_2"})
		if took := time.Since(start); took != cancelAfter {
			t.Errorf("the cancelled calls took %v on the bubble's clock; want them ended at the cancellation, %v", took, cancelAfter)
		}
		for i, r := range results {
			if KindOf(r.Err) != KindCanceled {
				t.Errorf("result %d: %v; want KindCanceled", i, r.Err)
			}
		}
		if calls := rec.recorded(); len(calls) != 2 {
			t.Errorf("%d requests; want 2", len(calls))
		}
	})
}

// TestCallDeadlineCountsTimeouts: a call cut at its deadline is a
// timeout for the circuits: its merchant's circuit opens.
func TestCallDeadlineCountsTimeouts(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		srv := memHangingServer(t)
		c := newClient(t, Config{BaseURL: srv.URL, HTTPClient: srv.hc, Timeout: 100 * time.Millisecond,
			Resilience: Resilience{BreakerFailures: 2, BreakerCooldown: time.Minute}})
		ctx := opCtx()
		for i := range 2 {
			if _, err := c.GetPayment(ctx, "pay_1"); KindOf(err) != KindTimeout {
				t.Fatalf("call %d: %v; want KindTimeout", i, err)
			}
		}
		_, err := c.GetPayment(ctx, "pay_1")
		var e *Error
		if !errors.As(err, &e) || e.Message != msgMerchantCircuitOpen {
			t.Errorf("third call: %v; want the merchant's open circuit", err)
		}
		if n := srv.calls.Load(); n != 2 {
			t.Errorf("server got %d calls; want 2", n)
		}
	})
}
