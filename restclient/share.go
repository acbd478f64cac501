package restclient

// In-flight REST calls shared within a credential pair: a GET asked for while
// the same GET (route, id, query) of the same accepted pair is in flight
// waits, up to a bound on waiters, for its answer. Never across pairs (the
// pair itself is compared), for an unaccepted pair, or after the answer's body
// is read. Each caller decodes the shared bytes into its own value and gets
// its own copy of an error.
//
// The maker makes the call as any call, on its own goroutine, slot and
// deadline. A waiter whose context ends leaves; when the maker's ends first
// (or it panics), each waiter left makes the call itself, once: the maker's
// deadline or cancellation is never a waiter's error.

import (
	"context"
	"net/url"
	"sync"
)

// DefaultShareWaiters callers at most wait for one call (Config.ShareWaiters
// 0); more call themselves.
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
	body      []byte // the answer, kept only when someone waits
	err       error
	abandoned bool // the maker left or panicked: the waiters call again
}

// flights is the table of shared calls.
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
	fs := &flights{max: maxWaiters, m: make(map[flightKey]*flight)}
	fs.pool.New = func() any { return &flight{fs: fs} }
	return fs
}

// join makes the caller a waiter of k's call of the same pair, if any, with
// room.
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
	if f.done == nil {
		f.done = make(chan struct{})
	}
	return f
}

// start is join (if mayJoin) or, with no call of k in flight, enters the
// caller's, its slot held (waiters wait for nothing else); neither (nil,
// false): the call is unshared.
func (fs *flights) start(k flightKey, c Credentials, mayJoin bool) (f *flight, joined bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.m[k] != nil {
		if mayJoin {
			f = fs.joinLocked(k, c)
		}
		return f, f != nil
	}
	f = fs.pool.Get().(*flight)
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

// keep is told each 2xx body of f before it goes back to the pool: f closes,
// waiters get a copy.
func (fs *flights) keep(f *flight, buf []byte) {
	fs.mu.Lock()
	fs.closeLocked(f)
	n := f.waiters
	fs.mu.Unlock()
	if n > 0 {
		f.body = append(f.body[:0], buf...)
	}
}

// finish ends f with err, waking its waiters; abandoned: the maker left or
// panicked.
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

// shared is do's call of an accepted pair: it waits for the same call, makes
// it for others, or unshared; mayJoin false: never waits.
func (c *Client) shared(ctx context.Context, k flightKey, ep Endpoint, u *url.URL, cv *credentialsValue, into errorCarrier, mayJoin bool) error {
	if mayJoin {
		if f := c.flights.join(k, cv.c); f != nil {
			return c.waitFor(ctx, f, k, ep, u, cv, into)
		}
	}
	s, err := c.limiter.slotFor(ctx, cv)
	if err != nil {
		return acquireError(ctx, ep, err)
	}
	f, joined := c.flights.start(k, cv.c, mayJoin)
	if joined { // made while this caller waited for its slot
		s.release()
		return c.waitFor(ctx, f, k, ep, u, cv, into)
	}
	defer s.release()
	if f == nil {
		return c.call(ctx, ep, k.id, u, cv, into, nil)
	}
	abandoned := true // until the call returns
	defer func() { c.flights.finish(f, err, abandoned) }()
	err = c.call(ctx, ep, k.id, u, cv, into, f)
	abandoned = err != nil && ctx.Err() != nil
	return err
}

// waitFor decodes f's answer into into (or ends with ctx), making the call
// itself if the maker left.
func (c *Client) waitFor(ctx context.Context, f *flight, k flightKey, ep Endpoint, u *url.URL, cv *credentialsValue, into errorCarrier) error {
	select {
	case <-f.done:
	case <-ctx.Done():
		return ctxError(ctx, ep, ctx.Err())
	}
	if f.abandoned {
		return c.shared(ctx, k, ep, u, cv, into, false)
	}
	if log := callLogFrom(ctx); log != nil {
		log.addShared()
	}
	if f.err != nil {
		if e, ok := f.err.(*Error); ok {
			cp := *e
			return &cp
		}
		return f.err
	}
	if err := decodeBuf(f.body, into, nil); err != nil {
		return unexpected(ep, describeDecodeError(err)) // unreachable: the maker decoded the same bytes
	}
	return nil
}
