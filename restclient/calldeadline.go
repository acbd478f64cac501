package restclient

// The deadline of one REST call (Config.Timeout, REST_TIMEOUT), shared by
// the calls of one operation (one CallLog): a call is cut at least the
// timeout and at most the timeout plus 1 % after its start, or at its
// caller's deadline when that comes first. The shared context ends with
// the operation's context, at its deadline, or when the last call using
// it ends: it never outlives its calls.

import (
	"context"
	"reflect"
	"sync"
	"time"
)

// deadlineSlackDiv: a shared deadline is at most timeout/deadlineSlackDiv
// later than a call's own.
const deadlineSlackDiv = 100

// sharedDeadline is where the calls of one operation find the deadline
// context they share (CallLog.deadline).
type sharedDeadline struct {
	mu    sync.Mutex
	cur   *deadlineCtx // the one a call may join; nil: none
	first deadlineCtx  // cur's storage whenever no call uses it
}

// deadlineCtx is one shared deadline context made from base, ending at
// at or when the last of its calls leaves it.
type deadlineCtx struct {
	base   context.Context
	ctx    context.Context
	cancel context.CancelFunc
	at     time.Time
	calls  int // attempts using it (under sharedDeadline.mu)
}

// callContext returns the context of an attempt that starts at now: ctx
// itself when its deadline comes within the timeout, else one that ends
// the timeout after now (up to the slack later when shared through log).
// The attempt calls cancel, when not nil, and leaves shared, when not
// nil, when it ends.
func (c *Client) callContext(ctx context.Context, now time.Time, log *CallLog) (_ context.Context, cancel context.CancelFunc, shared *deadlineCtx) {
	d, hasDeadline := ctx.Deadline()
	if hasDeadline && d.Sub(now) <= c.timeout {
		return ctx, nil, nil
	}
	due := now.Add(c.timeout)
	if log != nil && c.slack > 0 {
		base := ctx
		if h, ok := ctx.(*Held); ok {
			// A fan-out's held slot is read before the attempt only.
			base = h.Context
		}
		// Shared only by the same context: a pointer (other kinds can
		// panic when compared, or be copies).
		if reflect.TypeOf(base).Kind() == reflect.Pointer {
			s := &log.deadline
			s.mu.Lock()
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
			// The caller's deadline falls within the slack: the call's own.
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
