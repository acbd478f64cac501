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
// The caller that makes the call makes it as any call, on its own
// goroutine, holding its own slot, under its own deadline: no goroutine
// or context of its own, so that an unshared call costs what it did. A
// waiter whose context ends leaves, and the call goes on. When the
// maker's context ends first (or its call panics), the call ends with
// it, and each waiter left makes the call itself, once, under its own
// deadline: the maker's deadline or cancellation is never a waiter's
// error.

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
	fs  *flights
	key flightKey
	// Under flights.mu.
	creds   Credentials
	open    bool          // in the table: callers may join
	waiters int           // callers that joined
	done    chan struct{} // made by the first waiter, closed by finish

	// Set before done is closed.
	body      []byte // the answer's bytes, kept only when someone waits
	err       error
	abandoned bool // the maker left or panicked: the waiters call again
}

// flights is the table of shared calls in flight.
type flights struct {
	max  int
	mu   sync.Mutex
	m    map[flightKey]*flight
	pool sync.Pool // of *flight nobody waited for
}

// newFlights returns the table, or nil (no sharing) for maxWaiters < 1.
func newFlights(maxWaiters int) *flights {
	if maxWaiters < 1 {
		return nil
	}
	return &flights{max: maxWaiters, m: make(map[flightKey]*flight)}
}

// start counts the caller in as a waiter of k's call in flight, when
// there is one for the same pair with room for it (joined); else, when
// none is in flight, enters one that the caller makes (f). Neither (nil,
// false): the call in flight has no room or is another pair's, and the
// caller makes one of its own, unshared.
func (fs *flights) start(k flightKey, c Credentials, mayJoin bool) (f *flight, joined bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if f := fs.m[k]; f != nil {
		if !mayJoin || !f.open || f.creds != c || f.waiters >= fs.max {
			return nil, false
		}
		f.waiters++
		if f.done == nil {
			f.done = make(chan struct{})
		}
		return f, true
	}
	f, _ = fs.pool.Get().(*flight)
	if f == nil {
		f = &flight{fs: fs}
	}
	f.key, f.creds, f.open = k, c, true
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

// finish ends the maker's f with err, waking its waiters; abandoned: the
// maker left before the answer, or panicked.
func (fs *flights) finish(f *flight, err error, abandoned bool) {
	fs.mu.Lock()
	fs.closeLocked(f)
	done := f.done
	fs.mu.Unlock()
	if done == nil { // nobody waited, nor can any more
		*f = flight{fs: fs, body: f.body[:0]}
		fs.pool.Put(f)
		return
	}
	f.err, f.abandoned = err, abandoned
	close(done)
}

// await waits for f's answer or the end of ctx. The waiter decodes the
// shared bytes into its own into and gets its own copy of an error;
// again: the maker left, and the caller is to make the call itself.
func (c *Client) await(ctx context.Context, f *flight, ep Endpoint, into errorCarrier) (err error, again bool) {
	select {
	case <-f.done:
	case <-ctx.Done():
		return ctxError(ctx, ep, ctx.Err()), false
	}
	if f.abandoned {
		return nil, true
	}
	if log := callLogFrom(ctx); log != nil {
		log.addShared()
	}
	if f.err != nil {
		if e, ok := f.err.(*Error); ok {
			cp := *e
			return &cp, false
		}
		return f.err, false
	}
	if err := decodeBuf(f.body, into, nil); err != nil {
		return unexpected(ep, describeDecodeError(err)), false // unreachable: the maker decoded the same bytes
	}
	return nil, false
}

// sharable reports whether cv's calls may share: the pair is accepted
// (every pair is when the unaccepted bounds are off).
func (c *Client) sharable(cv *credentialsValue) bool {
	return c.flights != nil && c.accepted(cv)
}

// shared is do's call, shared: it waits for the same call in flight, or
// makes it (with the slot take gives it) for others to wait for. ok
// false: it is to be made unshared. mayJoin false: make it, never wait.
func (c *Client) shared(ctx context.Context, k flightKey, ep Endpoint, u *url.URL, cv *credentialsValue, into errorCarrier, mayJoin bool) (err error, ok bool) {
	f, joined := c.flights.start(k, cv.c, mayJoin)
	if joined {
		err, again := c.await(ctx, f, ep, into)
		if again {
			return c.shared(ctx, k, ep, u, cv, into, false)
		}
		return err, true
	}
	if f == nil {
		return nil, false
	}
	abandoned := true // until the call returns
	defer func() { c.flights.finish(f, err, abandoned) }()
	s, err := c.limiter.slotFor(ctx, cv)
	if err != nil {
		err = acquireError(ctx, ep, err)
		abandoned = ctx.Err() != nil
		return err, true
	}
	defer s.release()
	err = c.call(ctx, ep, k.id, u, cv, into, f)
	abandoned = err != nil && ctx.Err() != nil
	return err, true
}
