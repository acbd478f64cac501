package livepoll

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// Defaults of the settings (docs/operations.md says why).
const (
	DefaultInterval          = 2 * time.Second
	DefaultWatchAfterSettled = 10 * time.Minute
	DefaultMaxLifetime       = time.Hour
	DefaultIdleTimeout       = 15 * time.Minute
	DefaultMaxPerMerchant    = 100
	DefaultMaxSubscriptions  = 2000
	DefaultResumeWindow      = 10 * time.Minute
	DefaultMaxPending        = 64 // each provisional subscription costs a poller until its first poll answers

	// MaxKept is the transitions kept per resource to resume, and a
	// subscription's buffer (then ErrTooSlow).
	MaxKept = 16

	maxBackoffFactor = 4   // MaxInterval's default, in Intervals
	jitter           = 0.1 // the largest fraction a wait is moved by, either way
	// MaxKeyBytes is the longest Key field accepted: its ID comes from a client.
	MaxKeyBytes = 256
)

// Scopes of a LimitError.
const (
	ScopeMerchant = "merchant"
	ScopeProcess  = "process"
	ScopePending  = "pending" // too many provisional subscriptions (Config.MaxPending)
)

// Why a subscription ended, from Subscription.Err (which lists the rest).
var (
	ErrLifetime = errors.New("livepoll: the subscription reached its maximum lifetime")
	ErrIdle     = errors.New("livepoll: the resource did not change for the idle timeout")
	ErrClosed   = errors.New("livepoll: the hub is closed")
	// ErrTooManySubscriptions is what a *LimitError is (errors.Is).
	ErrTooManySubscriptions = errors.New("livepoll: too many subscriptions")
	// ErrInvalidKey refuses a key with an empty or over-long field, or a nil fetch.
	ErrInvalidKey    = errors.New("livepoll: invalid subscription key")
	ErrFetchPanicked = errors.New("livepoll: fetch panicked")
	ErrResumeExpired = errors.New("livepoll: the last event id is outside the resume window")
	// ErrTooSlow ends a subscription that left more than MaxKept events unread.
	ErrTooSlow = errors.New("livepoll: the subscriber fell too far behind")
)

// LimitError refuses a subscription over a bound, naming the bound, never the merchant.
type LimitError struct {
	Scope string // ScopeMerchant, ScopeProcess or ScopePending
	Limit int
}

func (e *LimitError) Error() string {
	return "livepoll: too many subscriptions for this " + e.Scope + " (limit " + strconv.Itoa(e.Limit) + ")"
}

// Is makes errors.Is(err, ErrTooManySubscriptions) true.
func (e *LimitError) Is(target error) bool { return target == ErrTooManySubscriptions }

// Key names one polled resource of one merchant (fields at most MaxKeyBytes); credential pairs
// differ in Merchant, so they never share a poller.
type Key struct {
	Merchant string // opaque, derived by the caller, never a secret
	Kind     string // a small fixed set: "payment", "checkout_session"
	ID       string // the resource id as the client gave it
}

// Phase is where a resource is in its life, as the caller reads a state.
type Phase uint8

const (
	PhaseOpen    Phase = iota // the resource may change; it is polled
	PhaseSettled              // it may change once more (SUCCEEDED to REFUNDED); polled for WatchAfterSettled
	PhaseFinal                // it will not change; its subscriptions complete after it
)

// Snapshot is one state of a resource.
type Snapshot struct {
	Value       any    // handed to subscribers as is; the hub never reads it
	Fingerprint string // identifies the state: an event is sent only when it changes
	Phase       Phase  // whether to keep polling
	Data        []byte // Value encoded for a Store, rebuilt by Config.Decode
}

// Event is what a subscriber receives: a state, or a failed fetch (Err), which
// ends it only when Permanent.
type Event struct {
	// ID numbers a resource's transitions on every replica (0: an error), for
	// a subscriber to resume after.
	ID       uint64
	Snapshot Snapshot
	Err      error
}

// FetchFunc reads the resource once, bounded, returning when ctx ends (its
// last subscriber left, or Hub.Close).
type FetchFunc func(ctx context.Context) (Snapshot, error)

// RetryAfterer is a fetch error asking the poller to wait (a REST 429).
type RetryAfterer interface{ RetryAfter() time.Duration }

// Permanent marks a fetch error that ends every subscription of the key with
// err (not found, unauthenticated).
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanent{err}
}

type permanent struct{ error }

func (p permanent) Unwrap() error { return p.error }

// Outcome of one poll, handed to Config.OnPoll.
type Outcome string

const (
	OutcomeChanged     Outcome = "changed"      // a new state (the first one included)
	OutcomeUnchanged   Outcome = "unchanged"    // the same fingerprint
	OutcomeError       Outcome = "error"        // the fetch failed
	OutcomeRateLimited Outcome = "rate_limited" // the fetch failed with a RetryAfter
)

// Config bounds and paces a Hub; each field's zero is the default named, a negative value is refused by New.
type Config struct {
	Interval          time.Duration // the first wait between two fetches of one resource (2 s)
	MaxInterval       time.Duration // how far the wait grows while nothing changes, at least Interval (4 × Interval)
	WatchAfterSettled time.Duration // how long a PhaseSettled resource is still polled (10 min)
	MaxLifetime       time.Duration // the longest life of one subscription (1 h)
	IdleTimeout       time.Duration // ends the subscriptions of a resource unchanged this long (15 min)
	MaxPerMerchant    int           // bounds the live subscriptions of one Key.Merchant (100)
	MaxSubscriptions  int           // bounds the live subscriptions of the process (2000)
	MaxPending        int           // bounds the provisional subscriptions of the process (64)
	ResumeWindow      time.Duration // how long transitions are kept after the last poll (10 min)
	MaxHistories      int           // bounds the unpolled resources kept without a Store (MaxSubscriptions)
	// Store, when not nil, shares pollers between replicas; Decode (required
	// with it) rebuilds Values from Data.
	Store  Store
	Decode func(kind string, data []byte) (any, error)
	// OnPoll, when not nil, is called after each fetch from the poller's goroutine; it must not block.
	OnPoll func(kind string, outcome Outcome)
}

// Hub holds the pollers and subscriptions of the process; safe for concurrent use.
type Hub struct {
	cfg Config

	now   func() time.Time // the clock, replaced by tests
	sleep func(ctx context.Context, d time.Duration) bool

	base   context.Context // parent of every poller's context; cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // one per running poller goroutine

	// mu guards what follows (Stats reads the counts without it); lock order:
	// mu, then a poller's mu.
	mu          sync.Mutex
	closed      bool
	pollers     map[Key]*poller
	perMerchant map[string]int
	hist        *simplelru.LRU[Key, *history] // without a Store: the kept transitions of keys no poller runs for

	subs, nPollers, pending atomic.Int64 // counted subscriptions, len(pollers), provisional subscriptions
}

// New returns a Hub for cfg.
func New(cfg Config) (*Hub, error) {
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration // zero: set below
	}{
		{"SUBSCRIPTION_POLL_INTERVAL", &cfg.Interval, DefaultInterval}, {"MaxInterval", &cfg.MaxInterval, 0},
		{"WatchAfterSettled", &cfg.WatchAfterSettled, DefaultWatchAfterSettled}, {"MaxLifetime", &cfg.MaxLifetime, DefaultMaxLifetime},
		{"IdleTimeout", &cfg.IdleTimeout, DefaultIdleTimeout}, {"ResumeWindow", &cfg.ResumeWindow, DefaultResumeWindow},
	} {
		if *d.v < 0 {
			return nil, fmt.Errorf("livepoll: %s must not be negative, not %s", d.name, *d.v)
		}
		*d.v = cmp.Or(*d.v, d.def)
	}
	if cfg.Store != nil && cfg.Decode == nil {
		return nil, errors.New("livepoll: a Store needs a Decode")
	}
	if cfg.MaxPerMerchant < 0 || cfg.MaxSubscriptions < 0 || cfg.MaxHistories < 0 || cfg.MaxPending < 0 {
		return nil, errors.New("livepoll: MaxPerMerchant, MaxSubscriptions, MaxHistories and MaxPending must not be negative")
	}
	cfg.MaxInterval = cmp.Or(cfg.MaxInterval, maxBackoffFactor*cfg.Interval)
	if cfg.MaxInterval < cfg.Interval {
		return nil, fmt.Errorf("livepoll: MaxInterval %s is less than the interval %s", cfg.MaxInterval, cfg.Interval)
	}
	cfg.MaxPerMerchant = cmp.Or(cfg.MaxPerMerchant, DefaultMaxPerMerchant)
	cfg.MaxSubscriptions = cmp.Or(cfg.MaxSubscriptions, DefaultMaxSubscriptions)
	cfg.MaxPending = cmp.Or(cfg.MaxPending, DefaultMaxPending)
	cfg.MaxHistories = cmp.Or(cfg.MaxHistories, cfg.MaxSubscriptions)

	// Never fails: MaxHistories is positive. Evicting a history stops its timer.
	hist, _ := simplelru.NewLRU(cfg.MaxHistories, func(_ Key, hs *history) { hs.timer.Stop() })
	h := &Hub{cfg: cfg, now: time.Now, sleep: sleep, pollers: map[Key]*poller{}, perMerchant: map[string]int{},
		hist: hist}
	h.base, h.cancel = context.WithCancel(context.Background())
	return h, nil
}

// sleep waits d or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool { return sleepOrWake(ctx, d, nil) }

// sleepOrWake waits d, or until wake receives; false when ctx ends first.
func sleepOrWake(ctx context.Context, d time.Duration, wake <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-wake:
		return true
	case <-ctx.Done():
		return false
	}
}

// Stats is a count of what is live, for gauges.
type Stats struct {
	Subscriptions int // live subscriptions counted against the caps
	Pending       int // provisional subscriptions waiting for their key's first successful poll
	Pollers       int // running pollers: at most one per Key, REST GETs in flight at most this many
}

// Stats returns the live counts without taking the hub's lock.
func (h *Hub) Stats() Stats {
	return Stats{Subscriptions: int(h.subs.Load()), Pollers: int(h.nPollers.Load()), Pending: int(h.pending.Load())}
}

// Subscription is one subscriber's stream of events.
type Subscription struct {
	c   chan Event
	hub *Hub
	p   *poller

	// Guarded by p.mu.
	after     uint64 // the event id it resumes after (0: none)
	ready     bool   // it has been served its first events
	counted   bool   // it counts against the caps (else: provisional, in pending)
	cursor    uint64 // the id of the last event it was sent
	waits     int    // reads of the Store while its resume id was unknown
	ended     bool
	err       error
	stopCtx   func() bool // stops the context.AfterFunc
	lifetimer *time.Timer
}

// Events streams the state (resuming: the transitions after the id), each
// change and error; closed at the end.
func (s *Subscription) Events() <-chan Event { return s.c }

// Err says why it ended: nil while live or after a final state; an Err* above,
// ctx's cause or a Permanent error.
func (s *Subscription) Err() error { return withMu(&s.p.mu, func() error { return s.err }) }

// Close ends the subscription (once); the last one of its key stops the poller.
func (s *Subscription) Close() { s.hub.leave(s, context.Canceled) }

// SubscribeAfter subscribes to key, read by fetch unless already polled, until
// ctx ends, resuming after the event id after (0: none) with the kept
// transitions after it; an id not kept ends it with ErrResumeExpired (at once
// without a Store). Before any work it refuses a bad key, a closed hub, a done
// ctx, a *LimitError.
func (h *Hub) SubscribeAfter(ctx context.Context, key Key, fetch FetchFunc, after uint64) (*Subscription, error) {
	return h.subscribe(ctx, key, fetch, after, true)
}

// SubscribeProvisional is SubscribeAfter for a pair the REST API has not accepted yet: it counts against
// MaxPending until its key has a state, then against the caps (one reached ends it: *LimitError).
func (h *Hub) SubscribeProvisional(ctx context.Context, key Key, fetch FetchFunc, after uint64) (*Subscription, error) {
	return h.subscribe(ctx, key, fetch, after, false)
}

func (h *Hub) subscribe(ctx context.Context, key Key, fetch FetchFunc, after uint64, counted bool) (*Subscription, error) {
	if !validKey(key) || fetch == nil {
		return nil, ErrInvalidKey
	}
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	p := h.pollers[key]
	if !counted && p != nil && withMu(&p.mu, func() bool { return p.current && len(p.recs) > 0 }) {
		counted = true // its key's poller (same merchant) has had a state: nothing provisional left
	}
	if counted {
		if err := h.capLocked(key.Merchant); err != nil {
			return nil, err
		}
	} else if h.pending.Load() >= int64(h.cfg.MaxPending) {
		return nil, &LimitError{Scope: ScopePending, Limit: h.cfg.MaxPending}
	}

	if after > 0 && h.cfg.Store == nil && !h.resumableLocked(key, p, after) {
		return nil, ErrResumeExpired // before any work: no poller, no fetch
	}
	if p == nil {
		p = h.newPoller(key, fetch)
		h.pollers[key] = p
		h.nPollers.Add(1)
		h.wg.Add(1)
		go p.run()
	}
	s := &Subscription{c: make(chan Event, MaxKept+1), hub: h, p: p, after: after}

	p.mu.Lock()
	defer p.mu.Unlock()
	p.subs[s] = struct{}{}
	p.joined = h.now()
	// Both callbacks take h.mu, so they cannot run before this returns.
	s.stopCtx = context.AfterFunc(ctx, func() { h.leave(s, context.Cause(ctx)) })
	s.lifetimer = time.AfterFunc(h.cfg.MaxLifetime, func() { h.leave(s, ErrLifetime) })
	if counted {
		h.countLocked(s)
	} else {
		h.pending.Add(1)
	}
	p.serve(s) // what it can have at once; it may end it (a kept final state)
	return s, nil
}

// capLocked returns the *LimitError a new subscription of merchant meets; h.mu is held.
func (h *Hub) capLocked(merchant string) error {
	switch {
	case h.subs.Load() >= int64(h.cfg.MaxSubscriptions):
		return &LimitError{Scope: ScopeProcess, Limit: h.cfg.MaxSubscriptions}
	case h.perMerchant[merchant] >= h.cfg.MaxPerMerchant:
		return &LimitError{Scope: ScopeMerchant, Limit: h.cfg.MaxPerMerchant}
	}
	return nil
}

// countLocked counts s against the caps; h.mu is held.
func (h *Hub) countLocked(s *Subscription) {
	s.counted = true
	h.subs.Add(1)
	h.perMerchant[s.p.key.Merchant]++
}

// promoteLocked counts a provisional s, or ends it with a cap's *LimitError
// (false); h.mu and s.p.mu are held.
func (h *Hub) promoteLocked(s *Subscription) bool {
	if s.counted {
		return true
	}
	if err := h.capLocked(s.p.key.Merchant); err != nil {
		s.p.endSub(s, err)
		return false
	}
	h.pending.Add(-1)
	h.countLocked(s)
	return true
}

// resumableLocked reports whether key's transitions after after are kept; h.mu is held.
func (h *Hub) resumableLocked(key Key, p *poller, after uint64) bool {
	if p != nil {
		return withMu(&p.mu, func() bool { return resumable(p.recs, after) })
	}
	hs, ok := h.hist.Peek(key)
	return ok && resumable(hs.recs, after)
}

func validKey(k Key) bool {
	for _, f := range []string{k.Merchant, k.Kind, k.ID} {
		if f == "" || len(f) > MaxKeyBytes {
			return false
		}
	}
	return true
}

// leave ends s with reason, stopping its poller if s was the last subscriber.
func (h *Hub) leave(s *Subscription, reason error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := s.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if s.ended {
		return
	}
	p.endSub(s, reason)
	if len(p.subs) == 0 {
		h.stopLocked(p)
	}
}

// endSub forgets s, closes it and releases its slot; h.mu and p.mu are held.
func (p *poller) endSub(s *Subscription, reason error) {
	h := p.hub
	delete(p.subs, s)
	s.ended, s.err = true, reason
	close(s.c)
	s.stopCtx()
	s.lifetimer.Stop()
	if !s.counted {
		h.pending.Add(-1)
		return
	}
	h.subs.Add(-1)
	m := s.p.key.Merchant
	if h.perMerchant[m]--; h.perMerchant[m] <= 0 {
		delete(h.perMerchant, m) // no entry per merchant that has none
	}
}

// stopLocked forgets p and cancels its goroutine's context (a fetch in flight included); h.mu and p.mu are held.
func (h *Hub) stopLocked(p *poller) {
	p.stopped = true
	if h.pollers[p.key] == p {
		delete(h.pollers, p.key)
		h.nPollers.Add(-1)
		if h.cfg.Store == nil && len(p.recs) > 0 && !h.closed {
			h.keepLocked(p.key, p.recs)
		}
	}
	p.cancel()
}

// keepLocked keeps a stopped poller's transitions for ResumeWindow; h.mu is held.
func (h *Hub) keepLocked(key Key, recs []record) {
	hs := &history{recs: recs}
	hs.timer = time.AfterFunc(h.cfg.ResumeWindow, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if cur, ok := h.hist.Peek(key); ok && cur == hs {
			h.hist.Remove(key)
		}
	})
	h.hist.Add(key, hs)
}

// Close ends every subscription with ErrClosed, stops every poller and waits for them; Subscribe then fails.
func (h *Hub) Close() {
	h.mu.Lock()
	h.closed = true
	for _, p := range h.pollers {
		p.mu.Lock()
		for s := range p.subs {
			p.endSub(s, ErrClosed)
		}
		h.stopLocked(p)
		p.mu.Unlock()
	}
	h.hist.Purge()
	h.mu.Unlock()
	h.cancel()
	h.wg.Wait()
}
