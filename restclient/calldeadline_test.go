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
	"testing/synctest"
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
	ctx          context.Context
}

func (r *callRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	at := time.Now()
	ctx := req.Context()
	d, ok := ctx.Deadline()
	r.mu.Lock()
	r.calls = append(r.calls, recordedCall{at: at, deadline: d, hasDeadline: ok, done: ctx.Done(), ctx: ctx})
	r.mu.Unlock()
	return r.next.RoundTrip(req)
}

// overlapRT holds each request until n have arrived (or 5 s have passed),
// so that n calls overlap, as a fan-out's do.
type overlapRT struct {
	n       int
	mu      sync.Mutex
	arrived int
	all     chan struct{}
	next    http.RoundTripper
}

func newOverlapRT(n int) *overlapRT {
	return &overlapRT{n: n, all: make(chan struct{}), next: http.DefaultTransport}
}

func (o *overlapRT) RoundTrip(req *http.Request) (*http.Response, error) {
	o.mu.Lock()
	if o.arrived++; o.arrived == o.n {
		close(o.all)
	}
	o.mu.Unlock()
	select {
	case <-o.all:
	case <-time.After(5 * time.Second):
	}
	return o.next.RoundTrip(req)
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
	t.Parallel()
	// In memory: each case runs in a synctest bubble, on its fake clock.
	srv := memJSONServer(t, http.StatusOK, paymentBody)
	const id = "pay_prod_0123456789abcdef0123456789abcdef"
	// setup: a client whose requests are recorded and, with overlap > 1,
	// held until that many have arrived.
	setup := func(t *testing.T, timeout time.Duration, overlap int) (*Client, *callRecorder) {
		rec := &callRecorder{next: srv.hc.Transport}
		if overlap > 1 {
			o := newOverlapRT(overlap)
			o.next = srv.hc.Transport
			rec.next = o
		}
		return newClient(t, Config{BaseURL: srv.URL, Timeout: timeout, HTTPClient: &http.Client{Transport: rec}}), rec
	}
	// get makes a call with each context at once (after the delays from
	// the first), and returns when each started.
	get := func(t *testing.T, c *Client, ctxs []context.Context, delays ...time.Duration) []time.Time {
		t.Helper()
		befores := make([]time.Time, len(ctxs))
		errs := make([]error, len(ctxs))
		var wg sync.WaitGroup
		for i, ctx := range ctxs {
			if i < len(delays) {
				time.Sleep(delays[i])
			}
			befores[i] = time.Now()
			wg.Go(func() { _, errs[i] = c.GetPayment(ctx, id) })
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		return befores
	}
	sameCtx := func(calls []recordedCall) bool {
		for _, c := range calls {
			if c.done != calls[0].done {
				return false
			}
		}
		return true
	}
	ended := func(t *testing.T, calls []recordedCall) {
		t.Helper()
		for i, c := range calls {
			if c.ctx.Err() == nil {
				t.Errorf("call %d's context is still live after the calls returned; want it cancelled (its timer stopped)", i)
			}
		}
	}

	t.Run("overlapping calls of one operation share one deadline", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			const timeout = 10 * time.Second
			c, rec := setup(t, timeout, 3)
			ctx := opCtx()
			before := get(t, c, []context.Context{ctx, ctx, ctx})[0]
			calls := rec.recorded()
			for _, call := range calls {
				within(t, "call", call, before, timeout)
			}
			if !sameCtx(calls) {
				t.Error("calls have contexts of their own; want the operation's shared one")
			}
			ended(t, calls)
		})
	})

	t.Run("a held slot's call shares its operation's", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			const timeout = 10 * time.Second
			c, rec := setup(t, timeout, 2)
			ctx := opCtx()
			h, err := c.Hold(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer h.Release()
			before := get(t, c, []context.Context{ctx, h})[0]
			calls := rec.recorded()
			for _, call := range calls {
				within(t, "call", call, before, timeout)
			}
			if !sameCtx(calls) {
				t.Error("the held call has a context of its own; want the operation's shared one")
			}
			ended(t, calls)
		})
	})

	t.Run("calls one after the other: each its own, ended with it", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			const timeout = 10 * time.Second
			c, rec := setup(t, timeout, 1)
			ctx := opCtx()
			var befores []time.Time
			for range 2 {
				befores = append(befores, get(t, c, []context.Context{ctx})[0])
			}
			calls := rec.recorded()
			for i, call := range calls {
				within(t, "call", call, befores[i], timeout)
			}
			ended(t, calls)
		})
	})

	t.Run("a call after the slack gets a deadline of its own", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			const timeout = time.Second // slack 10ms
			c, rec := setup(t, timeout, 2)
			ctx := opCtx()
			// The first call is held in the transport until the second,
			// started two slacks later, arrives: sharing the first's deadline
			// would leave the second less than the timeout.
			befores := get(t, c, []context.Context{ctx, ctx}, 0, 2*timeout/deadlineSlackDiv)
			calls := rec.recorded()
			if len(calls) != 2 {
				t.Fatalf("%d calls", len(calls))
			}
			if calls[1].at.Before(calls[0].at) {
				calls[0], calls[1] = calls[1], calls[0]
			}
			within(t, "first call", calls[0], befores[0], timeout)
			within(t, "second call", calls[1], befores[1], timeout)
			if calls[1].done == calls[0].done {
				t.Error("the second call shares the first's context past the slack")
			}
			ended(t, calls)
		})
	})

	t.Run("the caller's deadline within the slack: the call's own", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			const timeout = 10 * time.Second
			c, rec := setup(t, timeout, 2)
			ctx, cancel := context.WithTimeout(opCtx(), timeout+timeout/deadlineSlackDiv/2)
			defer cancel()
			callerDeadline, _ := ctx.Deadline()
			before := get(t, c, []context.Context{ctx, ctx})[0]
			calls := rec.recorded()
			for i := range calls {
				// Cut at the timeout, before the caller's deadline, as without
				// the sharing (the timeout's error, counted by the circuits).
				if got := calls[i].deadline; got.Before(before.Add(timeout)) || got.After(calls[i].at.Add(timeout)) || !got.Before(callerDeadline) {
					t.Errorf("call %d: deadline %v after its start, want the timeout %v", i, got.Sub(before), timeout)
				}
			}
			if sameCtx(calls) {
				t.Error("calls share a deadline later than the caller's")
			}
		})
	})

	t.Run("the caller's deadline past the slack: shared", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			const timeout = 10 * time.Second
			c, rec := setup(t, timeout, 2)
			ctx, cancel := context.WithTimeout(opCtx(), time.Hour)
			defer cancel()
			before := get(t, c, []context.Context{ctx, ctx})[0]
			calls := rec.recorded()
			for _, call := range calls {
				within(t, "call", call, before, timeout)
			}
			if !sameCtx(calls) {
				t.Error("calls have contexts of their own; want the shared one")
			}
			ended(t, calls)
		})
	})

	t.Run("other contexts of one operation: each within the bounds", func(t *testing.T) {
		const timeout = 10 * time.Second
		c, rec := setup(t, timeout, 4)
		ctx := opCtx()
		type key struct{}
		other := context.WithValue(ctx, key{}, 1)
		before := get(t, c, []context.Context{ctx, other, ctx, other})[0]
		calls := rec.recorded()
		for _, call := range calls {
			within(t, "call", call, before, timeout)
		}
		ended(t, calls)
	})
}

// TestSharedDeadlineCutsHungCalls: the calls of a fan-out that hang are
// cut after the timeout, not before and not later than the timeout plus
// the slack; a wave started when the first has been cut gets the whole
// timeout again.
func TestSharedDeadlineCutsHungCalls(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const timeout = 300 * time.Millisecond // slack 3ms
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
			if got := call.deadline.Sub(call.at); got < timeout || got > timeout+timeout/deadlineSlackDiv {
				t.Errorf("request %d: deadline %v after it reached the transport; want the timeout %v (and at most its 1 %% slack)", i, got, timeout)
			}
		}
		if slack := timeout / deadlineSlackDiv; elapsed < 2*timeout || elapsed > 2*(timeout+slack) {
			t.Errorf("two waves took %v; want each cut at the timeout (%v, at most %v with the slack)", elapsed, timeout, timeout+slack)
		}
		if srv.calls.Load() != 4 {
			t.Errorf("server got %d calls; want 4", srv.calls.Load())
		}
	})
}

// TestSharedDeadlineCallerCancel: the shared context is the operation's
// child, so the caller's cancellation still ends hung calls at once.
func TestSharedDeadlineCallerCancel(t *testing.T) {
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

// TestSharedDeadlineCountsTimeouts: a call cut at the shared deadline is
// a timeout for the circuits, as before: its merchant's circuit opens.
func TestSharedDeadlineCountsTimeouts(t *testing.T) {
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
