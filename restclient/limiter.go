package restclient

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"paygraph/internal/opscope"
)

// Defaults of the limiter's bounds (and of REST_MAX_CONCURRENCY and REST_MAX_INFLIGHT).
const (
	DefaultRequestLimit           = 16  // the usual per-request bound (WithRequestLimit)
	DefaultMaxInFlight            = 256 // the process-wide bound
	DefaultMaxInFlightPerMerchant = 64  // a quarter: one merchant's load leaves the rest to the others
)

// LimiterConfig configures a Limiter. Zero values take the defaults.
type LimiterConfig struct {
	MaxInFlight            int // bounds the REST calls in flight in the process
	MaxInFlightPerMerchant int // bounds those of one pair (at most MaxInFlight)
	// Unaccepted bounds the calls of pairs not yet accepted (unaccepted.go);
	// zero: no bounds.
	Unaccepted UnacceptedConfig
}

// Limiter is the one place REST calls wait for slots: their request's
// (WithRequestLimit), their merchant's (credential pair, by its HMAC) and the
// process's, narrowest first, so a busy merchant queues on its own; a
// request's calls queue one at a time, so freed slots go to the waiting
// requests in turn. Idle merchants go as the map grows.
type Limiter struct {
	process     chan struct{}
	perMerchant int
	gate        *gate // nil: every pair is a merchant at once

	mu        sync.Mutex
	merchants map[merchantKey]*merchantSlots
	sweepAt   int // the map's size at which join drops idle entries
}

const minKeptMerchants = 1024 // the fewest merchant entries before idle ones go

// merchantKey identifies a credential pair (merchant.go): none takes another's
// slots without its secret.
type merchantKey [sha256.Size]byte

// merchantSlots is a merchant's semaphore; refs: calls holding or waiting for
// it (Limiter.mu).
type merchantSlots struct {
	sem  chan struct{}
	refs int
}

// NewLimiter returns a limiter with cfg's bounds.
func NewLimiter(cfg LimiterConfig) *Limiter {
	process := positiveOr(cfg.MaxInFlight, DefaultMaxInFlight)
	l := &Limiter{
		process:     make(chan struct{}, process),
		perMerchant: min(positiveOr(cfg.MaxInFlightPerMerchant, DefaultMaxInFlightPerMerchant), process),
		merchants:   make(map[merchantKey]*merchantSlots),
		sweepAt:     minKeptMerchants,
	}
	var err error
	if l.gate, err = newGate(cfg.Unaccepted); err != nil {
		panic(err) // unreachable: newGate clamps what ratelimit.New checks
	}
	return l
}

func positiveOr[T int | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

// requestSem is a request's semaphore (WithRequestLimit).
type requestSem struct {
	sem  chan struct{}
	once sync.Once
	turn chan struct{} // the request's place in queue, made at its first wait
}

func (r *requestSem) turnOf() chan struct{} {
	r.once.Do(func() { r.turn = make(chan struct{}, 1) })
	return r.turn
}

type requestSlotsKey struct{}

// WithRequestLimit returns a context whose REST calls (its children's too)
// hold at most n slots (1 if n < 1).
func WithRequestLimit(ctx context.Context, n int) context.Context {
	return opscope.WithValue(ctx, requestSlotsKey{}, &requestSem{sem: make(chan struct{}, max(n, 1))})
}

func requestSlotsFrom(ctx context.Context) *requestSem {
	r, _ := ctx.Value(requestSlotsKey{}).(*requestSem)
	return r
}

// slot is what a call holds; its zero value holds nothing.
type slot struct {
	l        *Limiter
	request  chan struct{}
	merchant *merchantSlots
	probe    *ticket // an unaccepted pair's turn (gate), ended on release
}

// acquire takes a request, merchant and process slot, in order, giving them
// back if ctx ends first.
func (l *Limiter) acquire(ctx context.Context, cv *credentialsValue) (slot, error) {
	s := slot{l: l}
	var err error
	if l.gate != nil { // first: a call waiting for its pair's probe holds no slot
		if s.probe, err = l.gate.admit(ctx, cv); err != nil {
			return slot{}, err
		}
	}
	req := requestSlotsFrom(ctx)
	if req != nil {
		if err = take(ctx, req.sem); err != nil {
			s.release()
			return slot{}, err
		}
		s.request = req.sem
	}
	m := l.join(cv.merchant)
	if err = queue(ctx, req, m.sem); err == nil {
		if err = queue(ctx, req, l.process); err == nil {
			s.merchant = m
			return s, nil
		}
		<-m.sem
	}
	l.leave(m)
	s.release()
	return slot{}, err
}

// take puts one token in sem, waiting while it is full unless ctx ends.
func take(ctx context.Context, sem chan struct{}) error {
	select {
	case sem <- struct{}{}:
		return nil
	default: // full: wait
	}
	select {
	case sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// queue is take of a semaphore the requests share; req's calls (nil: none)
// wait one at a time.
func queue(ctx context.Context, req *requestSem, sem chan struct{}) error {
	select {
	case sem <- struct{}{}: // free: nobody waits (a full channel's senders queue)
		return nil
	default:
	}
	if req == nil {
		return take(ctx, sem)
	}
	turn := req.turnOf()
	select {
	case turn <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	err := take(ctx, sem)
	<-turn
	return err
}

// width is fanOut's goroutines for n ids: the slots ctx's request (or
// merchant) may hold, <= n.
func (l *Limiter) width(ctx context.Context, n int) int {
	w := l.perMerchant
	if req := requestSlotsFrom(ctx); req != nil {
		w = cap(req.sem)
	}
	return max(min(n, w), 1)
}

// join returns the merchant's semaphore, counting the caller in.
func (l *Limiter) join(k merchantKey) *merchantSlots {
	l.mu.Lock()
	m := l.merchants[k]
	if m == nil {
		if len(l.merchants) >= l.sweepAt { // drop the idle, sweep next at twice those left
			for key, e := range l.merchants {
				if e.refs == 0 {
					delete(l.merchants, key)
				}
			}
			l.sweepAt = max(minKeptMerchants, 2*len(l.merchants))
		}
		m = &merchantSlots{sem: make(chan struct{}, l.perMerchant)}
		l.merchants[k] = m
	}
	m.refs++
	l.mu.Unlock()
	return m
}

// leave counts the caller out; the entry stays for the next call.
func (l *Limiter) leave(m *merchantSlots) {
	l.mu.Lock()
	m.refs--
	l.mu.Unlock()
}

// release gives back every slot s holds.
func (s slot) release() {
	if s.merchant != nil {
		<-s.l.process
		<-s.merchant.sem
		s.l.leave(s.merchant)
	}
	if s.request != nil {
		<-s.request
	}
	s.probe.end()
}

// Held is a context with a slot taken ahead (Limiter.Hold) for its first call;
// later ones take their own.
type Held struct {
	context.Context
	s        slot
	used     atomic.Bool // a call took it
	released atomic.Bool
}

type heldKey struct{}

// Value implements context.Context.
func (h *Held) Value(key any) any {
	if key == (heldKey{}) {
		return h
	}
	return h.Context.Value(key)
}

// Release gives the slot back once the call has returned; again, or on nil, it does nothing.
func (h *Held) Release() {
	if h != nil && h.released.CompareAndSwap(false, true) {
		h.s.release()
	}
}

// Hold takes a slot for a REST call ahead, in the context returned (none
// without credentials).
func (l *Limiter) Hold(ctx context.Context) (*Held, error) {
	h := new(Held)
	if err := l.holdInto(ctx, h); err != nil {
		return nil, err
	}
	return h, nil
}

// holdInto is Hold into h, a zero Held; on an error h is left as it was.
func (l *Limiter) holdInto(ctx context.Context, h *Held) error {
	cv, ok := credentialsFrom(ctx)
	if !ok {
		h.Context = ctx
		h.used.Store(true)
		return nil
	}
	s, err := l.acquire(ctx, cv)
	if err != nil {
		return acquireError(ctx, "", err)
	}
	h.Context, h.s = ctx, s
	return nil
}

// slotFor returns the slot held for a call with ctx (its holder releases it), or a new one.
func (l *Limiter) slotFor(ctx context.Context, cv *credentialsValue) (slot, error) {
	if h, ok := ctx.Value(heldKey{}).(*Held); ok && h.s.l == l && h.used.CompareAndSwap(false, true) {
		return slot{probe: h.s.probe}, nil // the probe ends with this call: no later one waits for itself
	}
	return l.acquire(ctx, cv)
}

// acquireError answers a call without a slot: the gate's refusal, or the
// context's error.
func acquireError(ctx context.Context, ep Endpoint, err error) *Error {
	if e, ok := errors.AsType[*Error](err); ok {
		c := *e // the cached refusal is shared: a copy with the endpoint
		c.Endpoint = ep
		return &c
	}
	return ctxError(ctx, ep, err)
}

// short is the key's first 64 bits: the circuit breakers' table key.
func (k merchantKey) short() uint64 { return binary.LittleEndian.Uint64(k[:8]) }

// Hold is c's limiter's Hold.
func (c *Client) Hold(ctx context.Context) (*Held, error) { return c.limiter.Hold(ctx) }
