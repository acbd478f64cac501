package gqlhttp

import (
	"context"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"paygraph/internal/opscope"
	"paygraph/restclient"
)

// DefaultRefusalDelayMax is at most every held refusal's Retry-After: honouring it loses nothing.
const DefaultRefusalDelayMax = time.Second

// RefusalDelay holds the refusals of callers the REST API has not accepted for
// their Retry-After (at most max), as nginx's limit_req does, so that a
// closed-loop flood sends a few requests a second. At most maxHeld are held,
// and per client address its share: past it a refusal is answered at once, its
// connection closed and its peer reported (OnPastShare).
type RefusalDelay struct {
	max     time.Duration
	maxHeld int64
	share   int // held at once per client address (refusalShare)
	trusted []netip.Prefix
	held    atomic.Int64
	delayed atomic.Uint64
	done    chan struct{}
	close   sync.Once
	onPast  func(peer netip.Addr) // OnPastShare's
	mu      sync.Mutex
	byAddr  map[string]int                                        // held now per address key; at most maxHeld keys
	timer   func(d time.Duration) (<-chan time.Time, func() bool) // a fake clock in tests
}

// refusalShare is one address's share of maxHeld: a sixteenth, at least one.
func refusalShare(maxHeld int) int { return max(1, maxHeld/16) }

// NewRefusalDelay holds each answer at most max, maxHeld at once (0: none).
func NewRefusalDelay(max time.Duration, maxHeld int, trusted []netip.Prefix) *RefusalDelay {
	return &RefusalDelay{max: max, maxHeld: int64(maxHeld), share: refusalShare(maxHeld), trusted: trusted,
		byAddr: make(map[string]int), done: make(chan struct{}),
		timer: func(d time.Duration) (<-chan time.Time, func() bool) {
			t := time.NewTimer(d)
			return t.C, t.Stop
		}}
}

// OnPastShare sets f to be told the peer (never a trusted proxy) of each
// refusal held at half its address's share or more, or answered past it: the
// listener then closes its new connections for a while.
func (d *RefusalDelay) OnPastShare(f func(peer netip.Addr)) {
	if d != nil {
		d.onPast = f
	}
}

// Held is the number of answers held now (a gauge).
func (d *RefusalDelay) Held() int { return int(d.held.Load()) }

// Delayed is the number of answers held so far (a counter).
func (d *RefusalDelay) Delayed() uint64 { return d.delayed.Load() }

// Close frees every held answer, now and from now on (shutdown).
func (d *RefusalDelay) Close() {
	if d != nil {
		d.close.Do(func() { close(d.done) })
	}
}

// wrap is w and r with the refusal mark below it: a request marked refused
// has its answer held when written. Streams, refused per operation, are not.
func (d *RefusalDelay) wrap(w http.ResponseWriter, r *http.Request) (http.ResponseWriter, *http.Request) {
	if d == nil || d.max <= 0 || d.maxHeld <= 0 ||
		FirstHeader(r.Header, "Upgrade") != "" || wantsEventStream(FirstHeader(r.Header, "Accept")) {
		return w, r
	}
	// The mark lives in the writer: one allocation for both.
	rw := &refusalWriter{ResponseWriter: w, d: d, r: r}
	rw.ctx = opscope.WithValue(r.Context(), refusalKey{}, &rw.mark)
	return rw, opscope.Request(r, rw.ctx)
}

// wait holds the caller for retryAfter (0: max), at most max, or until ctx
// ends or Close; false, at once, when maxHeld or key's share are held. full:
// this answer takes key to half its share.
func (d *RefusalDelay) wait(ctx context.Context, retryAfter time.Duration, key string, full func()) bool {
	if retryAfter <= 0 || retryAfter > d.max {
		retryAfter = d.max
	}
	if d.held.Add(1) > d.maxHeld {
		d.held.Add(-1)
		return false
	}
	defer d.held.Add(-1)
	d.mu.Lock()
	if d.byAddr[key] >= d.share {
		d.mu.Unlock()
		return false
	}
	d.byAddr[key]++
	busy := 2*d.byAddr[key] >= d.share
	d.mu.Unlock()
	if busy {
		full()
	}
	defer func() {
		d.mu.Lock()
		if d.byAddr[key]--; d.byAddr[key] <= 0 {
			delete(d.byAddr, key)
		}
		d.mu.Unlock()
	}()
	d.delayed.Add(1)
	c, stop := d.timer(retryAfter)
	defer stop()
	select {
	case <-c:
	case <-ctx.Done():
	case <-d.done:
	}
	return true
}

// refusalMark is what the refusals below record: refused, its Retry-After
// (nanoseconds, 0: none), and whether an operation was admitted (not held).
type refusalMark struct {
	refused    atomic.Bool
	retryAfter atomic.Int64
	admitted   atomic.Bool
}

type refusalKey struct{}

// markRefused records a refusal, retryAfter its Retry-After (0: none), if any RefusalDelay is above.
func markRefused(ctx context.Context, retryAfter time.Duration) {
	if m, _ := ctx.Value(refusalKey{}).(*refusalMark); m != nil {
		m.retryAfter.Store(int64(retryAfter))
		m.refused.Store(true)
	}
}

// markAdmitted records that an operation of the request was admitted.
func markAdmitted(ctx context.Context) {
	if m, _ := ctx.Value(refusalKey{}).(*refusalMark); m != nil {
		m.admitted.Store(true)
	}
}

// refusalWriter holds, at its first write or flush, the answer of a request
// marked refused and not admitted. Only the request's goroutine writes it.
type refusalWriter struct {
	http.ResponseWriter
	d       *RefusalDelay
	r       *http.Request // its address is read only when refused
	ctx     context.Context
	checked bool
	mark    refusalMark
}

func (w *refusalWriter) hold() {
	if w.checked {
		return
	}
	w.checked = true
	refused := w.mark.refused.Load() && !w.mark.admitted.Load() || restclient.Refused(w.ctx)
	if !refused || w.d.wait(w.ctx, time.Duration(w.mark.retryAfter.Load()), restclient.AddressKey(ClientAddr(w.r, w.d.trusted)), w.full) {
		return
	}
	// Past the share or the cap: the connection closed, unless a trusted
	// proxy's (it carries others').
	if _, ok := w.peer(); ok {
		w.ResponseWriter.Header().Set("Connection", "close")
		w.full()
	}
}

// full reports the peer when its address holds half its share or more.
func (w *refusalWriter) full() {
	if peer, ok := w.peer(); ok && w.d.onPast != nil {
		w.d.onPast(peer)
	}
}

// peer is the connection's peer, unless it is a trusted proxy.
func (w *refusalWriter) peer() (netip.Addr, bool) {
	a := ClientAddr(w.r, nil) // the peer itself
	return a, a.IsValid() && !isTrusted(a, w.d.trusted)
}

func (w *refusalWriter) WriteHeader(code int) {
	w.hold()
	w.ResponseWriter.WriteHeader(code)
}

func (w *refusalWriter) Write(b []byte) (int, error) {
	w.hold()
	return w.ResponseWriter.Write(b)
}

func (w *refusalWriter) Flush() {
	w.hold()
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *refusalWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
