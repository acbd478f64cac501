package restclient

// The deadline the calls of one operation share (calldeadline.go): every
// call still gets at least the timeout from its start and at most the
// timeout plus the slack (1 %), a hung call is cut within those bounds
// with the timeout's error, its caller's cancellation still reaches it,
// and the circuits count it as before.

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"
)

// opCtx is credCtx as the gateway's operations make their calls: with the
// operation's CallLog, which holds the shared deadline.
func opCtx() context.Context { return WithCallLog(credCtx(), new(CallLog)) }

// callRecorder is a RoundTripper that remembers, of each request, when it
// got it, its context's deadline and its Done channel.
type callRecorder struct {
	mu    sync.Mutex
	calls []recordedCall
	next  http.RoundTripper
}

type recordedCall struct {
	at, deadline time.Time
	hasDeadline  bool
	done         <-chan struct{}
}

func (r *callRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	at := time.Now()
	ctx := req.Context()
	d, ok := ctx.Deadline()
	r.mu.Lock()
	r.calls = append(r.calls, recordedCall{at: at, deadline: d, hasDeadline: ok, done: ctx.Done()})
	r.mu.Unlock()
	return r.next.RoundTrip(req)
}

func (r *callRecorder) recorded() []recordedCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]recordedCall(nil), r.calls...)
}

// within checks a call's deadline against its bounds: at least timeout
// after before (taken before the call started) and at most timeout +
// slack after the request reached the transport (after the call
// started).
func within(t *testing.T, what string, c recordedCall, before time.Time, timeout time.Duration) {
	t.Helper()
	slack := timeout / deadlineSlackDiv
	if !c.hasDeadline {
		t.Fatalf("%s: the request carried no deadline", what)
	}
	if c.deadline.Before(before.Add(timeout)) {
		t.Errorf("%s: deadline %v after the call's start, want at least the timeout %v", what, c.deadline.Sub(before), timeout)
	}
	if c.deadline.After(c.at.Add(timeout + slack)) {
		t.Errorf("%s: deadline %v after the call's start, want at most the timeout and its slack %v", what, c.deadline.Sub(c.at), timeout+slack)
	}
}

func TestSharedCallDeadline(t *testing.T) {
	srv := jsonServer(t, http.StatusOK, paymentBody)
	const id = "pay_prod_0123456789abcdef0123456789abcdef"
	setup := func(t *testing.T, timeout time.Duration) (*Client, *callRecorder) {
		rec := &callRecorder{next: http.DefaultTransport}
		return newClient(t, Config{BaseURL: srv.URL, Timeout: timeout, HTTPClient: &http.Client{Transport: rec}}), rec
	}
	get := func(t *testing.T, c *Client, ctx context.Context) time.Time {
		t.Helper()
		before := time.Now()
		if _, err := c.GetPayment(ctx, id); err != nil {
			t.Fatal(err)
		}
		return before
	}

	t.Run("the calls of one operation share one deadline", func(t *testing.T) {
		const timeout = 10 * time.Second
		c, rec := setup(t, timeout)
		ctx := opCtx()
		var befores []time.Time
		for range 3 {
			befores = append(befores, get(t, c, ctx))
		}
		calls := rec.recorded()
		for i, call := range calls {
			within(t, "call", call, befores[i], timeout)
			if call.done != calls[0].done {
				t.Errorf("call %d has a context of its own; want the operation's shared one", i)
			}
		}
	})

	t.Run("a held slot's call shares its operation's", func(t *testing.T) {
		const timeout = 10 * time.Second
		c, rec := setup(t, timeout)
		ctx := opCtx()
		before := get(t, c, ctx)
		h, err := c.Hold(ctx)
		if err != nil {
			t.Fatal(err)
		}
		heldBefore := get(t, c, h)
		h.Release()
		calls := rec.recorded()
		within(t, "first call", calls[0], before, timeout)
		within(t, "held call", calls[1], heldBefore, timeout)
		if calls[1].done != calls[0].done {
			t.Error("the held call has a context of its own; want the operation's shared one")
		}
	})

	t.Run("a call after the slack gets a deadline of its own", func(t *testing.T) {
		const timeout = time.Second // slack 10ms
		c, rec := setup(t, timeout)
		ctx := opCtx()
		first := get(t, c, ctx)
		time.Sleep(2 * timeout / deadlineSlackDiv)
		second := get(t, c, ctx) // sharing the first's deadline would leave it less than the timeout
		calls := rec.recorded()
		within(t, "first call", calls[0], first, timeout)
		within(t, "second call", calls[1], second, timeout)
		if calls[1].done == calls[0].done {
			t.Error("the second call shares the first's context past the slack")
		}
	})

	t.Run("the caller's deadline within the slack: the call's own", func(t *testing.T) {
		const timeout = 10 * time.Second
		c, rec := setup(t, timeout)
		ctx, cancel := context.WithTimeout(opCtx(), timeout+timeout/deadlineSlackDiv/2)
		defer cancel()
		callerDeadline, _ := ctx.Deadline()
		first := get(t, c, ctx)
		second := get(t, c, ctx)
		calls := rec.recorded()
		for i, before := range []time.Time{first, second} {
			// Cut at the timeout, before the caller's deadline, as without
			// the sharing (the timeout's error, counted by the circuits).
			if got := calls[i].deadline; got.Before(before.Add(timeout)) || got.After(calls[i].at.Add(timeout)) || !got.Before(callerDeadline) {
				t.Errorf("call %d: deadline %v after its start, want the timeout %v", i, got.Sub(before), timeout)
			}
		}
		if calls[1].done == calls[0].done {
			t.Error("calls share a deadline later than the caller's")
		}
	})

	t.Run("the caller's deadline past the slack: shared", func(t *testing.T) {
		const timeout = 10 * time.Second
		c, rec := setup(t, timeout)
		ctx, cancel := context.WithTimeout(opCtx(), time.Hour)
		defer cancel()
		first := get(t, c, ctx)
		second := get(t, c, ctx)
		calls := rec.recorded()
		within(t, "first call", calls[0], first, timeout)
		within(t, "second call", calls[1], second, timeout)
		if calls[1].done != calls[0].done {
			t.Error("the second call has a context of its own; want the shared one")
		}
	})

	t.Run("other contexts of one operation: each within the bounds", func(t *testing.T) {
		const timeout = 10 * time.Second
		c, rec := setup(t, timeout)
		ctx := opCtx()
		type key struct{}
		other := context.WithValue(ctx, key{}, 1)
		var befores []time.Time
		for _, x := range []context.Context{ctx, other, ctx, other} {
			befores = append(befores, get(t, c, x))
		}
		for i, call := range rec.recorded() {
			within(t, "call", call, befores[i], timeout)
		}
	})
}

// TestSharedDeadlineCutsHungCalls: the calls of a fan-out that hang are
// cut after the timeout, not before and not later than the timeout plus
// the slack; a wave started when the first has been cut gets the whole
// timeout again.
func TestSharedDeadlineCutsHungCalls(t *testing.T) {
	const timeout = 300 * time.Millisecond // slack 3ms
	srv := hangingServer(t)
	rec := &callRecorder{next: http.DefaultTransport}
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
		// The lower bound: the call started at most a few ms before the
		// transport saw it (fails if a wave shares the other's deadline).
		if got := call.deadline.Sub(call.at); got < timeout-50*time.Millisecond || got > timeout+timeout/deadlineSlackDiv {
			t.Errorf("request %d: deadline %v after it reached the transport; want the timeout %v (and at most its 1 %% slack)", i, got, timeout)
		}
	}
	if elapsed < 2*timeout {
		t.Errorf("two waves took %v; want each cut at the timeout (%v)", elapsed, timeout)
	}
	if srv.calls.Load() != 4 {
		t.Errorf("server got %d calls; want 4", srv.calls.Load())
	}
}

// TestSharedDeadlineCallerCancel: the shared context is the operation's
// child, so the caller's cancellation still ends hung calls at once.
func TestSharedDeadlineCallerCancel(t *testing.T) {
	srv := hangingServer(t)
	rec := &callRecorder{next: http.DefaultTransport}
	c := newClient(t, Config{BaseURL: srv.URL, Timeout: 10 * time.Second, HTTPClient: &http.Client{Transport: rec}})
	ctx, cancel := context.WithCancel(opCtx())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	results := c.GetPayments(ctx, []string{"pay_1", "pay_2"})
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the cancelled calls took %v", took)
	}
	for i, r := range results {
		if KindOf(r.Err) != KindCanceled {
			t.Errorf("result %d: %v; want KindCanceled", i, r.Err)
		}
	}
	if calls := rec.recorded(); len(calls) != 2 {
		t.Errorf("%d requests; want 2", len(calls))
	}
}

// TestSharedDeadlineCountsTimeouts: a call cut at the shared deadline is
// a timeout for the circuits, as before: its merchant's circuit opens.
func TestSharedDeadlineCountsTimeouts(t *testing.T) {
	srv := hangingServer(t)
	c := newClient(t, Config{BaseURL: srv.URL, Timeout: 100 * time.Millisecond,
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
}
