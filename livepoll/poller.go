// The poller: one goroutine per polled Key, numbering, keeping and handing out its transitions.

package livepoll

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// record is one transition: a state and its event id.
type record struct {
	id   uint64
	snap Snapshot
}

// history is a key's recent transitions after its poller stopped (no Store).
type history struct {
	recs  []record
	timer *time.Timer
}

// resumable reports whether recs (oldest first, consecutive ids) hold all after after.
func resumable(recs []record, after uint64) bool {
	return len(recs) > 0 && after+1 >= recs[0].id && after <= recs[len(recs)-1].id
}

type poller struct {
	hub    *Hub
	key    Key
	fetch  FetchFunc
	ctx    context.Context
	cancel context.CancelFunc
	leader atomic.Bool   // with a Store: this replica holds the key's lease
	wake   chan struct{} // with a Store: the keeper took the lease (poll now)

	// mu guards what subscribers share with the goroutine.
	mu      sync.Mutex
	subs    map[*Subscription]struct{}
	stopped bool      // no longer in the hub: deliver nothing more
	recs    []record  // the kept transitions, oldest first, at most MaxKept
	current bool      // recs' last is the current state: a new subscriber gets it at once
	lastErr *Event    // the last fetch error while no state is current: a new subscriber's first event
	synced  bool      // recs were read from the Store (always true without one)
	joined  time.Time // when the last subscriber came: new interest restarts the idle clock
}

// newPoller makes key's poller, taking over its kept transitions; h.mu is held.
func (h *Hub) newPoller(key Key, fetch FetchFunc) *poller {
	p := &poller{hub: h, key: key, fetch: fetch, subs: map[*Subscription]struct{}{}}
	p.ctx, p.cancel = context.WithCancel(h.base)
	p.wake = make(chan struct{}, 1)
	if h.cfg.Store == nil {
		p.synced = true
		if hs, ok := h.hist.Peek(key); ok {
			h.hist.Remove(key) // stops its timer
			p.recs = hs.recs
			p.current = p.lastPhase() == PhaseFinal // it will not change: no fetch needed
		}
	}
	return p
}

// withMu returns f() run with mu held.
func withMu[T any](mu *sync.Mutex, f func() T) T {
	mu.Lock()
	defer mu.Unlock()
	return f()
}

func (p *poller) lastPhase() Phase {
	last, _ := p.lastLocked() // PhaseOpen when none
	return last.snap.Phase
}

// run polls until the key's subscriptions end; its locals are its own.
func (p *poller) run() {
	h := p.hub
	defer h.wg.Done()
	st := h.cfg.Store
	if st != nil {
		held, _ := st.Lease(p.ctx, p.key, 3*p.tick(), h.cfg.ResumeWindow)
		p.leader.Store(held) // the first poll need not wait for the keeper's first tick
		h.wg.Add(1)
		go p.keepLease()
	}
	var (
		wait      = h.cfg.Interval
		changedAt = h.now() // last change (or start): the idle clock
		settledAt time.Time // when the state became PhaseSettled; zero otherwise
		nextPoll  time.Time // zero: poll at once
		leader    bool
	)
	seen := func(now time.Time, ph Phase) {
		switch {
		case ph != PhaseSettled:
			settledAt = time.Time{}
		case settledAt.IsZero():
			settledAt = now
		}
	}
	for {
		now := h.now()
		if st != nil {
			// Another replica's transitions (all of them on the first pass).
			n, ph, done := p.catchUp(st)
			if done {
				return
			}
			if n > 0 {
				changedAt, wait = now, h.cfg.Interval
				seen(now, ph)
			}
		} else if withMu(&p.mu, func() bool { return p.current && p.lastPhase() == PhaseFinal }) {
			p.finish(nil, nil) // a kept final state was served: nothing to poll
			return
		}
		isLeader := st == nil || p.leader.Load()
		if isLeader && !leader {
			nextPoll = time.Time{} // taking over: poll at once
		}
		leader = isLeader
		if leader && !now.Before(nextPoll) {
			snap, err := p.safeFetch()
			if p.ctx.Err() != nil {
				return // stopped while fetching: nobody is left to tell
			}
			now = h.now()
			last, ok := p.last()
			var (
				pause time.Duration
				ra    RetryAfterer
				perm  permanent
			)
			outcome := OutcomeUnchanged
			switch {
			case errors.As(err, &ra):
				outcome, pause = OutcomeRateLimited, ra.RetryAfter()
			case err != nil:
				outcome = OutcomeError
			case !ok || snap.Fingerprint != last.snap.Fingerprint:
				outcome = OutcomeChanged
			}
			if f := h.cfg.OnPoll; f != nil {
				f(p.key.Kind, outcome)
			}
			switch {
			case errors.As(err, &perm):
				p.finish(&Event{Err: perm.error}, perm.error)
				return
			case err != nil:
				p.publishErr(Event{Err: err})
				wait = grow(wait, h.cfg)
			case outcome == OutcomeChanged:
				changedAt, wait = now, h.cfg.Interval
				rec := record{id: uint64(now.UnixMilli()), snap: snap}
				if ok {
					rec.id = last.id + 1
				}
				if st != nil && !p.append(st, rec, last.id) {
					// Another replica recorded one first: read it, fetch again (none readable: publish rec).
					n, _, done := p.catchUp(st)
					if done {
						return
					}
					if n > 0 {
						nextPoll = time.Time{}
						if !h.sleep(p.ctx, p.tick()) {
							return
						}
						continue
					}
				}
				p.locked(func() {
					p.keepLocked(rec)
					p.serveAllLocked()
				})
				if snap.Phase == PhaseFinal {
					p.finish(nil, nil)
					return
				}
			default: // unchanged: waiting subscribers get the last state
				p.locked(func() {
					if !p.current {
						p.current, p.lastErr = true, nil
						p.serveAllLocked()
					}
				})
				wait = grow(wait, h.cfg)
			}
			if err == nil {
				seen(now, snap.Phase)
			}
			nextPoll = now.Add(max(jittered(wait), pause))
		}
		joined := withMu(&p.mu, func() time.Time { return p.joined }) // a new subscriber restarts the idle clock
		switch {
		case !settledAt.IsZero() && now.Sub(settledAt) >= h.cfg.WatchAfterSettled:
			p.finish(nil, nil) // settled long enough: complete
			return
		case now.Sub(changedAt) >= h.cfg.IdleTimeout && now.Sub(joined) >= h.cfg.IdleTimeout:
			p.finish(nil, ErrIdle)
			return
		}
		d := nextPoll.Sub(now)
		if st != nil && (!leader || d > p.tick()) {
			d = p.tick() // read the Store (and maybe take over) every tick
		}
		if st == nil {
			if !h.sleep(p.ctx, d) {
				return
			}
		} else if !sleepOrWake(p.ctx, d, p.wake) { // or until the keeper took the lease
			return
		}
	}
}

// tick is how often, with a Store, a poller reads it and renews the lease, which lives three ticks:
// one lost with its replica is taken within one Interval.
func (p *poller) tick() time.Duration { return max(p.hub.cfg.Interval/4, time.Millisecond) }

// storeFailures Lease calls in a row must fail before a replica polls for itself.
const storeFailures = 3

// keepLease takes or renews the key's lease every tick until the poller stops, then gives it up;
// while the Store fails it acts as the holder.
func (p *poller) keepLease() {
	h := p.hub
	defer h.wg.Done()
	st := h.cfg.Store
	failed := 0
	for h.sleep(p.ctx, p.tick()) {
		held, err := st.Lease(p.ctx, p.key, 3*p.tick(), h.cfg.ResumeWindow)
		if p.ctx.Err() != nil {
			break
		}
		failed++
		if err == nil {
			failed = 0
		}
		now := held || failed >= storeFailures
		if was := p.leader.Swap(now); now && !was {
			select {
			case p.wake <- struct{}{}:
			default:
			}
		}
	}
	if p.leader.Load() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		st.Release(ctx, p.key)
	}
}

// catchUp serves the Store's transitions after the last kept: how many, the
// last one's phase, whether p is done.
func (p *poller) catchUp(st Store) (n int, ph Phase, done bool) {
	last, _ := p.last()
	got, err := st.Since(p.ctx, p.key, last.id)
	recs := make([]record, 0, len(got))
	if err == nil {
		for _, r := range got {
			v, derr := p.hub.cfg.Decode(p.key.Kind, r.Data)
			if derr != nil {
				continue // not a state this version can read: skipped, never sent half
			}
			recs = append(recs, record{id: r.ID, snap: Snapshot{Value: v, Fingerprint: r.Fingerprint, Phase: r.Phase, Data: r.Data}})
		}
	}
	p.locked(func() {
		p.synced = true
		for _, r := range recs {
			if last, ok := p.lastLocked(); ok && r.id <= last.id {
				continue
			}
			p.keepLocked(r)
			n++
		}
		if err == nil && len(p.recs) > 0 {
			p.current = true
		}
		p.serveAllLocked()
		ph = p.lastPhase()
	})
	if ph == PhaseFinal {
		p.finish(nil, nil) // nothing when stopped already
	}
	return n, ph, p.ctx.Err() != nil // stopping cancels ctx
}

// append records rec in the Store unless another replica recorded one after prev (a Store error counts as recorded).
func (p *poller) append(st Store, rec record, prev uint64) bool {
	last, err := st.Append(p.ctx, p.key, Record{ID: rec.id, Fingerprint: rec.snap.Fingerprint, Phase: rec.snap.Phase, Data: rec.snap.Data},
		prev, p.hub.cfg.ResumeWindow)
	return err != nil || last == rec.id
}

func (p *poller) last() (record, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastLocked()
}

func (p *poller) lastLocked() (record, bool) {
	if len(p.recs) == 0 {
		return record{}, false
	}
	return p.recs[len(p.recs)-1], true
}

// safeFetch calls fetch; a panic ends the key's subscriptions, not the process.
func (p *poller) safeFetch() (snap Snapshot, err error) {
	defer func() {
		if recover() != nil {
			err = Permanent(ErrFetchPanicked)
		}
	}()
	return p.fetch(p.ctx)
}

// grow lengthens the wait by half an Interval, up to MaxInterval.
func grow(wait time.Duration, cfg Config) time.Duration {
	return min(wait+cfg.Interval/2, cfg.MaxInterval)
}

// jittered moves d by up to ±jitter, uniformly (spreading needs no secrecy).
func jittered(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (1 - jitter + 2*jitter*rand.Float64()))
}

// locked runs f with h.mu and p.mu held, unless p has stopped.
func (p *poller) locked(f func()) {
	h := p.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.stopped {
		f()
	}
}

// keepLocked keeps rec, sent to the subscribers already served; the caller
// serves the rest against all kept.
func (p *poller) keepLocked(rec record) {
	p.recs = append(p.recs, rec)
	if n := len(p.recs); n > MaxKept {
		p.recs = append(p.recs[:0:0], p.recs[n-MaxKept:]...) // a fresh array: the old one is freed
	}
	p.current, p.lastErr = true, nil
	for s := range p.subs {
		if s.ready && rec.id > s.cursor {
			p.sendState(s, rec)
		}
	}
}

// publishErr offers a failed fetch to the subscribers with nothing unread, and
// (no state current) to new ones.
func (p *poller) publishErr(ev Event) {
	p.locked(func() {
		if !p.current {
			p.lastErr = &ev
		}
		for s := range p.subs {
			if s.ready || s.after == 0 {
				offerErr(s, ev)
			}
		}
	})
}

func offerErr(s *Subscription, ev Event) {
	if len(s.c) > 0 {
		return
	}
	select {
	case s.c <- ev:
	default:
	}
}

// serve gives a new subscriber the current state, or the kept transitions after its resume id, or
// ErrResumeExpired; h.mu and p.mu are held.
func (p *poller) serve(s *Subscription) {
	if s.ready || s.ended {
		return
	}
	last, ok := p.lastLocked()
	if s.after == 0 {
		switch {
		case p.current && ok:
			if !p.hub.promoteLocked(s) {
				return
			}
			s.ready = true
			p.sendState(s, last)
		case p.lastErr != nil:
			offerErr(s, *p.lastErr)
		}
		return
	}
	if !p.synced {
		return // with a Store: the kept transitions are not read yet
	}
	if !resumable(p.recs, s.after) {
		s.waits++
		if p.hub.cfg.Store != nil && (!ok || s.after > last.id) && s.waits < 2 {
			return // an id this replica has not read yet: wait for one more read of the Store
		}
		p.endSub(s, ErrResumeExpired)
		return
	}
	if !p.hub.promoteLocked(s) {
		return
	}
	s.ready, s.cursor = true, s.after
	for _, r := range p.recs {
		if r.id > s.cursor && !s.ended {
			p.sendState(s, r)
		}
	}
}

// sendState queues r for s, ending s after a final state or with ErrTooSlow when full; h.mu and p.mu are held.
func (p *poller) sendState(s *Subscription, r record) {
	s.cursor = r.id
	select {
	case s.c <- Event{ID: r.id, Snapshot: r.snap}:
	default: // at most one error and MaxKept states unread
		p.endSub(s, ErrTooSlow)
		return
	}
	if r.snap.Phase == PhaseFinal {
		p.endSub(s, nil)
	}
}

// serveAllLocked serves every subscriber and stops p if none is left; h.mu and p.mu are held.
func (p *poller) serveAllLocked() {
	for s := range p.subs {
		p.serve(s)
	}
	if len(p.subs) == 0 && !p.stopped {
		p.hub.stopLocked(p)
	}
}

// finish offers ev (when not nil) to every subscriber, ends them with reason, and stops p.
func (p *poller) finish(ev *Event, reason error) {
	p.locked(func() {
		for s := range p.subs {
			if ev != nil {
				offerErr(s, *ev)
			}
			p.endSub(s, reason)
		}
		p.hub.stopLocked(p)
	})
}
