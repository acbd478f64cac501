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
// is its child) or at its deadline, whichever comes first; nothing else
// cancels it, since calls may still be using it when a later one replaces
// it.

import (
	"context"
	"reflect"
	"sync"
	"time"
)

// deadlineSlackDiv: a call's deadline is at most timeout/deadlineSlackDiv
// after its start plus the timeout (1 %).
const deadlineSlackDiv = 100

// sharedDeadline is the deadline context the calls of one operation share
// (CallLog.deadline): made from base, the calls' context, ending at at.
type sharedDeadline struct {
	mu     sync.Mutex
	base   context.Context
	ctx    context.Context
	at     time.Time
	cancel context.CancelFunc // for the record: see the file's comment
}

// callContext returns the context of an attempt of a call with ctx that
// starts at now: ctx itself when its deadline comes within the timeout
// (then it is the only one that can fire), else a context that ends the
// timeout after now (to the slack later when shared through log); cancel,
// when not nil, is the attempt's to call when it ends.
func (c *Client) callContext(ctx context.Context, now time.Time, log *CallLog) (_ context.Context, cancel context.CancelFunc) {
	d, hasDeadline := ctx.Deadline()
	if hasDeadline && d.Sub(now) <= c.timeout {
		return ctx, nil
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
		// and ends at the same time: a pointer (compared, other kinds
		// can panic or be copies).
		if reflect.TypeOf(base).Kind() == reflect.Pointer {
			s := &log.deadline
			s.mu.Lock()
			if s.base == base && !s.at.Before(due) { // at most the slack after due: s.at is an earlier start's due + slack
				shared := s.ctx
				s.mu.Unlock()
				return shared, nil
			}
			if at := due.Add(c.slack); !hasDeadline || !d.Before(at) {
				s.base, s.at = base, at
				s.ctx, s.cancel = context.WithDeadline(base, at)
				shared := s.ctx
				s.mu.Unlock()
				return shared, nil
			}
			// The caller's deadline falls within the slack: the call's
			// own, so that a hung call is cut at the timeout as before.
			s.mu.Unlock()
		}
	}
	return context.WithDeadline(ctx, due)
}
