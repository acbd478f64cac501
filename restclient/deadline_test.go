package restclient

// The deadline a REST call's request carries: the sooner of the caller's
// deadline and the call's own timeout (Config.Timeout), in each of the
// two ways attempt gets it (a timer of its own, or the caller's alone).

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"
)

// deadlineRecorder is a RoundTripper that remembers the deadline of each
// request's context and answers a payment.
type deadlineRecorder struct {
	mu        sync.Mutex
	deadlines []time.Time
	had       []bool
	next      http.RoundTripper
}

func (d *deadlineRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	dl, ok := r.Context().Deadline()
	d.mu.Lock()
	d.deadlines = append(d.deadlines, dl)
	d.had = append(d.had, ok)
	d.mu.Unlock()
	return d.next.RoundTrip(r)
}

func TestCallDeadline(t *testing.T) {
	t.Parallel()
	const timeout = 10 * time.Second
	srv := jsonServer(t, http.StatusOK, paymentBody)
	for _, tc := range []struct {
		name   string
		caller time.Duration // the caller's deadline from now; 0: none
		// want: the call's deadline is the caller's (true), or the
		// call's start plus the timeout (false).
		callers bool
	}{
		{"no caller deadline: the timeout's", 0, false},
		{"caller deadline later than the timeout: the timeout's", time.Hour, false},
		{"caller deadline just past the timeout: the timeout's", timeout + time.Second, false},
		{"caller deadline sooner than the timeout: the caller's", 2 * time.Second, true},
		{"caller deadline just before the timeout: the caller's", timeout - time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := &deadlineRecorder{next: http.DefaultTransport}
			c := newClient(t, Config{BaseURL: srv.URL, Timeout: timeout, HTTPClient: &http.Client{Transport: rec}})
			ctx := credCtx()
			var callerDeadline time.Time
			if tc.caller > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.caller)
				defer cancel()
				callerDeadline, _ = ctx.Deadline()
			}
			before := time.Now()
			if _, err := c.GetPayment(ctx, "pay_prod_0123456789abcdef0123456789abcdef"); err != nil {
				t.Fatal(err)
			}
			after := time.Now()
			if len(rec.had) != 1 || !rec.had[0] {
				t.Fatalf("the request carried no deadline (%v)", rec.had)
			}
			got := rec.deadlines[0]
			if tc.callers {
				if !got.Equal(callerDeadline) {
					t.Errorf("deadline %v, want the caller's %v", got, callerDeadline)
				}
				return
			}
			if got.Before(before.Add(timeout)) || got.After(after.Add(timeout)) {
				t.Errorf("deadline %v from the call's start, want the timeout %v", got.Sub(before), timeout)
			}
			if tc.caller > 0 && !got.Before(callerDeadline) {
				t.Errorf("deadline %v not before the caller's %v", got, callerDeadline)
			}
		})
	}
}
