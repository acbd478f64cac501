package restclient

// In-flight REST calls shared within a credential pair. A GET asked for
// while the same GET (route, id and query) of the same accepted pair is
// in flight waits for that call's answer instead of making its own, up
// to a bound on waiters. Never across pairs (the key is the pair's
// identity and the pair itself is compared), never for a pair the REST
// API has not accepted, never after the answer: the call leaves the table
// once its body is read, so nothing is cached. Each caller decodes the
// shared bytes into its own value and gets its own copy of an error.
//
// The call runs on a goroutine of its own under a context without any
// caller's deadline or cancellation (its attempts keep the per-call
// timeout), so that the caller that made it can leave when its own
// context ends while the others still wait; once every caller has left,
// the call is canceled. It holds the slot its maker took and releases it
// when it ends.

import (
	"context"
	"net/url"
	"sync"
)

// DefaultShareWaiters is how many callers may wait for one in-flight
// call besides the one that made it (REST_SHARE_WAITERS); more make
// calls of their own.
const DefaultShareWaiters = 64

// flightKey names a GET of one pair.
type flightKey struct {
	merchant  merchantKey
	ep        Endpoint
	id, query string
}

// flight is one shared call.
type flight struct {
	fs     *flights
	key    flightKey
	creds  Credentials
	done   chan struct{} // closed once body or err is set
	ctx    context.Context
	cancel context.CancelFunc

	// Under flights.mu.
	open    bool // in the table: callers may join
	waiters int  // callers that joined
	refs    int  // callers still waiting, the maker included

	body     []byte // the answer's bytes, kept only when someone waits
	err      error
	panicked bool // the call panicked with panicVal
	panicVal any
}

// flights is the table of shared calls in flight.
type flights struct {
	max int
	mu  sync.Mutex
	m   map[flightKey]*flight
}

// newFlights returns the table, or nil (no sharing) for maxWaiters < 1.
func newFlights(maxWaiters int) *flights {
	if maxWaiters < 1 {
		return nil
	}
	return &flights{max: maxWaiters, m: make(map[flightKey]*flight)}
}

// join counts the caller in as a waiter of k's call, if one is in flight
// for the same pair with room for it.
func (fs *flights) join(k flightKey, c Credentials) *flight {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.joinLocked(k, c)
}

func (fs *flights) joinLocked(k flightKey, c Credentials) *flight {
	f := fs.m[k]
	if f == nil || !f.open || f.creds != c || f.waiters >= fs.max {
		return nil
	}
	f.waiters++
	f.refs++
	return f
}

// start joins k's call as join does, or, with none in flight, enters a
// new one that ctx's caller makes; neither (nil, false): the call in
// flight has no room or is another pair's, and the caller makes one of
// its own, unshared.
func (fs *flights) start(ctx context.Context, k flightKey, c Credentials) (f *flight, joined bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if f := fs.joinLocked(k, c); f != nil {
		return f, true
	}
	if fs.m[k] != nil {
		return nil, false
	}
	fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	f = &flight{fs: fs, key: k, creds: c, done: make(chan struct{}), ctx: fctx, cancel: cancel, open: true, refs: 1}
	fs.m[k] = f
	return f, false
}

// closeLocked takes f out of the table: no one joins it any more.
func (fs *flights) closeLocked(f *flight) {
	if f.open {
		f.open = false
		delete(fs.m, f.key)
	}
}

// keep is told the bytes of each 2xx body read for f, before they go back
// to the pool: the answer has come, so f leaves the table, and the bytes
// are copied for the waiters, if there are any.
func (fs *flights) keep(f *flight, buf []byte) {
	fs.mu.Lock()
	fs.closeLocked(f)
	n := f.waiters
	fs.mu.Unlock()
	if n > 0 {
		f.body = append(f.body[:0], buf...)
	}
}

// finish ends f with err, waking its callers.
func (fs *flights) finish(f *flight, err error) {
	fs.mu.Lock()
	fs.closeLocked(f)
	fs.mu.Unlock()
	f.err = err
	close(f.done)
	f.cancel()
}

// leave counts out a caller whose context ended before the answer; the
// last one out cancels the call.
func (fs *flights) leave(f *flight) {
	fs.mu.Lock()
	f.refs--
	last := f.refs == 0
	if last {
		fs.closeLocked(f)
	}
	fs.mu.Unlock()
	if last {
		f.cancel()
	}
}

// await waits for f's answer or the end of ctx. A waiter decodes the
// shared bytes into its own into; the maker's into was decoded by the
// call itself. Every caller gets its own copy of an error.
func (c *Client) await(ctx context.Context, f *flight, ep Endpoint, into errorCarrier, waiter bool) error {
	select {
	case <-f.done:
	case <-ctx.Done():
		select {
		case <-f.done: // both: the answer wins
		default:
			c.flights.leave(f)
			return ctxError(ctx, ep, ctx.Err())
		}
	}
	if f.panicked {
		panic(f.panicVal)
	}
	if waiter {
		if log := callLogFrom(ctx); log != nil {
			log.addShared()
		}
	}
	if f.err != nil {
		if e, ok := f.err.(*Error); ok {
			cp := *e
			return &cp
		}
		return f.err
	}
	if !waiter {
		return nil
	}
	if err := decodeBuf(f.body, into, nil); err != nil {
		return unexpected(ep, describeDecodeError(err)) // unreachable: the maker decoded the same bytes
	}
	return nil
}

// sharable reports whether cv's calls may share: the pair is accepted
// (every pair is when the unaccepted bounds are off).
func (c *Client) sharable(cv *credentialsValue) bool {
	return c.flights != nil && c.accepted(cv)
}

// shared makes the call of do as a shared one: it waits for the same
// call in flight, or makes it on a goroutine of its own that others may
// wait for. ok false: the call is to be made unshared (s still held).
func (c *Client) shared(ctx context.Context, s slot, k flightKey, ep Endpoint, u *url.URL, cv *credentialsValue, into errorCarrier) (err error, ok bool) {
	f, joined := c.flights.start(ctx, k, cv.c)
	switch {
	case joined:
		s.release()
		return c.await(ctx, f, ep, into, true), true
	case f == nil:
		return nil, false
	}
	go func() {
		var err error
		defer func() {
			// A panic is each caller's, as it would be on its own call.
			if p := recover(); p != nil {
				f.panicked, f.panicVal = true, p
			}
			s.release() // before the callers wake
			c.flights.finish(f, err)
		}()
		err = c.call(f.ctx, ep, k.id, u, cv, into, f)
	}()
	return c.await(ctx, f, ep, into, false), true
}
