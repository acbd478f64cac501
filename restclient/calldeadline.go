package restclient

// The deadline of one REST call's request (Config.Timeout, the gateway's
// REST_TIMEOUT), and how the calls of one operation share it.
//
// A call is cut REST_TIMEOUT after its start, or at its caller's deadline
// when that comes first. A context with a deadline of its own for every
// call (context.WithDeadline: a timer, its registration with the caller's
// context and its removal, and net/http's child context registered with
// it: about 7 allocations) was 3.5 % of the gateway's CPU in list50addr,
// whose 51 calls each made one. So the calls of one operation (one
// CallLog) share one: the first makes it with the deadline start +
// timeout + slack (1 % of the timeout), and the later calls with the same
// context that start before that deadline less the timeout use it too.
// Every call therefore gets at least the timeout and at most the timeout
// plus 1 % (TestSharedCallDeadline): 10 s to 10.1 s with the default
// REST_TIMEOUT. The shared context ends with the operation's context (it
// is its child), at its deadline, or when the last call using it ends,
// whichever comes first: like a call's own, it never outlives its calls.

import (
	"context"
	"reflect"
	"sync"
	"time"
)

// deadlineSlackDiv: a call's deadline is at most timeout/deadlineSlackDiv
// after its start plus the timeout (1 %).
const deadlineSlackDiv = 100

// sharedDeadline is where the calls of one operation find the deadline
// context they share (CallLog.deadline).
type sharedDeadline struct {
	mu  sync.Mutex
	cur *deadlineCtx // the one a call may join; nil: none
	// first is cur's storage whenever it is free (no call uses it): an
	// operation whose calls overlap, or come one at a time, allocates none.
	first deadlineCtx
}

// deadlineCtx is one shared deadline context: made from base, the calls'
// context, ending at at, or when the last of its calls leaves it (so
// that its timer is stopped and what it holds let go as soon as no call
// needs it, as a call's own was).
type deadlineCtx struct {
	base   context.Context
	ctx    context.Context
	cancel context.CancelFunc
	at     time.Time
	calls  int // attempts using it (under sharedDeadline.mu)
}

// callContext returns the context of an attempt of a call with ctx that
// starts at now: ctx itself when its deadline comes within the timeout
// (then it is the only one that can fire), else a context that ends the
// timeout after now (to the slack later when shared through log). The
// attempt calls cancel, when not nil, when it ends, and leaves shared,
// when not nil, then (log.deadline.leave).
func (c *Client) callContext(ctx context.Context, now time.Time, log *CallLog) (_ context.Context, cancel context.CancelFunc, shared *deadlineCtx) {
	d, hasDeadline := ctx.Deadline()
	if hasDeadline && d.Sub(now) <= c.timeout {
		return ctx, nil, nil
	}
	due := now.Add(c.timeout)
	if log != nil && c.slack > 0 {
		base := ctx
		if h, ok := ctx.(*Held); ok {
			// A fan-out's held slot (limiter.go): only the call's slotFor
			// reads it, before the attempt; its calls without one share.
			base = h.Context
		}
		// Shared only by the same context, which holds the same values
		// and ends at the same time: a pointer (compared; other kinds
		// can panic or be copies).
		if reflect.TypeOf(base).Kind() == reflect.Pointer {
			s := &log.deadline
			s.mu.Lock()
			// s.cur.at is at most the slack after due: an earlier start's
			// due plus the slack.
			if cur := s.cur; cur != nil && cur.base == base && !cur.at.Before(due) {
				cur.calls++
				s.mu.Unlock()
				return cur.ctx, nil, cur
			}
			if at := due.Add(c.slack); !hasDeadline || !d.Before(at) {
				sd := &s.first
				if sd.calls > 0 { // still in use by calls of an earlier window
					sd = new(deadlineCtx)
				}
				sd.base, sd.at, sd.calls = base, at, 1
				sd.ctx, sd.cancel = context.WithDeadline(base, at)
				s.cur = sd
				s.mu.Unlock()
				return sd.ctx, nil, sd
			}
			// The caller's deadline falls within the slack: the call's
			// own, so that a hung call is cut at the timeout as before.
			s.mu.Unlock()
		}
	}
	callCtx, cancel := context.WithDeadline(ctx, due)
	return callCtx, cancel, nil
}

// leave ends an attempt's use of d; the last one out cancels it.
func (s *sharedDeadline) leave(d *deadlineCtx) {
	s.mu.Lock()
	d.calls--
	var cancel context.CancelFunc
	if d.calls == 0 {
		cancel = d.cancel
		d.base, d.ctx, d.cancel = nil, nil, nil
		if s.cur == d {
			s.cur = nil
		}
	}
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}
