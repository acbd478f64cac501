// The in-memory budgets: used when no Redis is configured, and as the fallback
// while Redis fails.

package ratelimit

import (
	"slices"
	"sync"
	"time"
)

// gcra charges n units to the budget whose theoretical arrival time is *tat,
// at now (nanoseconds on the store's clock): redis_rate's script in integer
// nanoseconds. A refused charge changes nothing.
func gcra(tat *int64, now int64, lim limit, n int) result {
	t := max(*tat, now)
	newTAT := t + int64(n)*lim.t
	allowAt := newTAT - lim.tau
	if now < allowAt {
		return result{retryAfter: time.Duration(allowAt - now), reset: time.Duration(t - now)}
	}
	*tat = newTAT
	return result{allowed: true, remaining: int((now - allowAt) / lim.t), reset: time.Duration(newTAT - now)}
}

// entry is one merchant's two budgets; with neither time after now it is full,
// as no entry: it can be dropped.
type entry struct{ req, rest int64 }

func (e entry) fullAt() int64 { return max(e.req, e.rest) }

// localStore holds the budgets of at most max merchants.
type localStore struct {
	mu   sync.Mutex
	m    map[string]entry
	max  int
	now  func() time.Time
	base time.Time // the clock's origin: nanoseconds are counted from it
}

func newLocalStore(maxMerchants int, now func() time.Time) *localStore {
	return &localStore{m: make(map[string]entry), max: maxMerchants, now: now, base: now()}
}

// allow charges one request, then (if the request was allowed) cost REST
// calls, atomically for this process.
func (s *localStore) allow(merchant string, reqLim limit, useReq bool, restLim limit, cost int, useRest bool) (req, rest result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := int64(s.now().Sub(s.base))
	e, ok := s.m[merchant]
	if !ok && len(s.m) >= s.max {
		s.evict(now)
	}
	if useReq {
		req = gcra(&e.req, now, reqLim, 1)
		if !req.allowed {
			return req, rest // refused: e is unchanged, and was stored already
		}
	}
	if useRest {
		rest = gcra(&e.rest, now, restLim, cost)
	}
	s.m[merchant] = e
	return req, rest
}

// peek is what is left of merchant's budget of lim, charging nothing.
func (s *localStore) peek(merchant string, lim limit) result {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := int64(s.now().Sub(s.base))
	tat := s.m[merchant].rest
	return gcra(&tat, now, lim, 0) // on a copy: nothing is stored
}

// evict makes room: every entry that is full again (no state lost), then, if
// more than three quarters of the cap are live, the entries closest to full
// down to three quarters (spreading the sweep over n/4 inserts).
func (s *localStore) evict(now int64) {
	for k, e := range s.m {
		if e.fullAt() <= now {
			delete(s.m, k)
		}
	}
	keep := s.max * 3 / 4
	if len(s.m) <= keep {
		return
	}
	times := make([]int64, 0, len(s.m))
	for _, e := range s.m {
		times = append(times, e.fullAt())
	}
	slices.Sort(times)
	cut := times[len(s.m)-keep-1] // drop entries full at or before this time
	for k, e := range s.m {
		if e.fullAt() <= cut {
			delete(s.m, k)
		}
	}
}
