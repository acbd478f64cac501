// The poller: one goroutine per polled Key, fetching, comparing and
// fanning out to the key's subscribers.

package livepoll

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"
)

type poller struct {
	hub    *Hub
	key    Key
	fetch  FetchFunc
	ctx    context.Context
	cancel context.CancelFunc

	// mu guards what subscribers share with the goroutine.
	mu        sync.Mutex
	subs      map[*Subscription]struct{}
	stopped   bool      // no longer in the hub: deliver nothing more
	hasLatest bool      // latest holds the first event a new subscriber gets
	latest    Event     // the last state, or the last error while no state was read
	joined    time.Time // when the last subscriber came: new interest restarts the idle clock
}

func (h *Hub) newPoller(key Key, fetch FetchFunc) *poller {
	p := &poller{hub: h, key: key, fetch: fetch, subs: map[*Subscription]struct{}{}}
	p.ctx, p.cancel = context.WithCancel(h.base)
	return p
}

// run polls until the key's subscriptions end. Its state (the wait, the
// fingerprint, the clocks of the phases) is its own: only the goroutine
// touches it.
func (p *poller) run() {
	h := p.hub
	defer h.wg.Done()
	var (
		wait      = h.cfg.Interval
		fp        string
		haveState bool
		changedAt = h.now() // last change (or start): the idle clock
		settledAt time.Time // when the state became PhaseSettled; zero otherwise
		pause     time.Duration
	)
	for {
		snap, err := p.safeFetch()
		if p.ctx.Err() != nil {
			return // stopped while fetching: nobody is left to tell
		}
		now := h.now()
		pause = 0
		var outcome Outcome
		switch {
		case err != nil:
			outcome = OutcomeError
			var ra RetryAfterer
			if errors.As(err, &ra) {
				outcome, pause = OutcomeRateLimited, ra.RetryAfter()
			}
			var perm permanent
			if errors.As(err, &perm) {
				p.report(outcome)
				p.finish(&Event{Err: perm.error}, perm.error)
				return
			}
			p.publish(Event{Err: err})
			wait = grow(wait, h.cfg)
		case !haveState || snap.Fingerprint != fp:
			outcome = OutcomeChanged
			fp, haveState, changedAt, wait = snap.Fingerprint, true, now, h.cfg.Interval
			if snap.Phase == PhaseFinal {
				p.report(outcome)
				p.finish(&Event{Snapshot: snap}, nil)
				return
			}
			p.publish(Event{Snapshot: snap})
		default:
			outcome = OutcomeUnchanged
			wait = grow(wait, h.cfg)
		}
		p.report(outcome)
		if err == nil {
			switch {
			case snap.Phase != PhaseSettled:
				settledAt = time.Time{}
			case settledAt.IsZero():
				settledAt = now
			}
		}
		switch {
		case !settledAt.IsZero() && now.Sub(settledAt) >= h.cfg.WatchAfterSettled:
			p.finish(nil, nil) // settled long enough: complete
			return
		case now.Sub(p.idleSince(changedAt)) >= h.cfg.IdleTimeout:
			p.finish(nil, ErrIdle)
			return
		}
		if !h.sleep(p.ctx, max(jittered(wait), pause)) {
			return
		}
	}
}

// idleSince is when the poller last had news: the later of the last change
// and the last subscriber's arrival.
func (p *poller) idleSince(changedAt time.Time) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.joined.After(changedAt) {
		return p.joined
	}
	return changedAt
}

// safeFetch calls fetch; a panic ends the key's subscriptions with
// ErrFetchPanicked instead of the process.
func (p *poller) safeFetch() (snap Snapshot, err error) {
	defer func() {
		if recover() != nil {
			err = Permanent(ErrFetchPanicked)
		}
	}()
	return p.fetch(p.ctx)
}

func (p *poller) report(o Outcome) {
	if f := p.hub.cfg.OnPoll; f != nil {
		f(p.key.Kind, o)
	}
}

// grow lengthens the wait after a poll that saw no change: half an
// Interval more, up to MaxInterval.
func grow(wait time.Duration, cfg Config) time.Duration {
	return min(wait+cfg.Interval/2, cfg.MaxInterval)
}

// jittered moves d by up to ±10 %, uniformly (math/rand/v2's generator:
// spreading pollers needs no secrecy).
func jittered(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (1 - jitter + 2*jitter*rand.Float64()))
}

// publish sends ev to every subscriber without waiting for any, and keeps
// it for subscribers to come.
func (p *poller) publish(ev Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	if ev.Err == nil || !p.hasLatest || p.latest.Err != nil {
		p.latest, p.hasLatest = ev, true // a state, or an error while no state was read
	}
	for s := range p.subs {
		offer(s.c, ev)
	}
}

// offer puts ev in c's one-event buffer, replacing an unread event, except
// that an error never replaces an unread state. Every sender of c holds
// the poller's mu, so after the drain the buffer has room.
func offer(c chan Event, ev Event) {
	select {
	case c <- ev:
		return
	default:
	}
	select {
	case old := <-c:
		if ev.Err != nil && old.Err == nil {
			ev = old
		}
	default: // the subscriber read it meanwhile
	}
	select {
	case c <- ev:
	default:
	}
}

// finish sends ev (when not nil) to every subscriber, then ends them all
// with reason and forgets the poller.
func (p *poller) finish(ev *Event, reason error) {
	h := p.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	for s := range p.subs {
		if ev != nil {
			offer(s.c, *ev)
		}
		h.endLocked(s, reason)
	}
	clear(p.subs)
	h.stopLocked(p)
}
