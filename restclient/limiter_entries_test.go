package restclient

// How the Limiter keeps merchant entries (issue 25): a merchant's entry
// outlives its calls, so that its next call reuses it, and idle entries
// are dropped when the map grows.

import (
	"context"
	"fmt"
	"testing"
)

// TestLimiterReusesMerchantEntry: a merchant's later calls take their
// slots from the entry its first call made: no allocation, the same
// semaphore.
func TestLimiterReusesMerchantEntry(t *testing.T) {
	l := NewLimiter(LimiterConfig{})
	ctx := merchantCtx("a")
	cv, _ := credentialsFrom(ctx)
	take := func() {
		s, err := l.acquire(ctx, cv)
		if err != nil {
			t.Fatal(err)
		}
		s.release()
	}
	take()
	first := l.merchants[cv.merchant]
	if first == nil {
		t.Fatal("no entry after the first call")
	}
	if allocs := testing.AllocsPerRun(100, take); allocs != 0 {
		t.Errorf("a merchant's later call allocates %.0f times; want 0", allocs)
	}
	if l.merchants[cv.merchant] != first {
		t.Error("a later call made a new entry: two semaphores for one merchant")
	}
	if calls, merchants := l.inFlight(); calls != 0 || merchants != 0 {
		t.Errorf("after release: %d calls, %d merchants in flight; want none", calls, merchants)
	}
}

// TestLimiterBoundsIdleEntries: however many merchants call once each,
// the map keeps at most minKeptMerchants idle entries, or twice the
// active merchants; the active ones are never dropped (their calls keep
// their bound).
func TestLimiterBoundsIdleEntries(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		active int // merchants holding a slot throughout
		idle   int // merchants that call once each, in turn
	}{
		{"idle merchants only", 0, 5 * minKeptMerchants},
		{"many active merchants", 3 * minKeptMerchants, 5 * minKeptMerchants},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := NewLimiter(LimiterConfig{MaxInFlight: tc.active + 1, MaxInFlightPerMerchant: 1})
			var held []*Held
			for i := range tc.active {
				held = append(held, hold(t, l, merchantCtx(fmt.Sprint("active", i))))
			}
			peak := 0
			for i := range tc.idle {
				h := hold(t, l, merchantCtx(fmt.Sprint("idle", i)))
				h.Release()
				peak = max(peak, len(l.merchants))
			}
			if limit := max(minKeptMerchants, 2*(tc.active+1)); peak > limit {
				t.Errorf("the map reached %d entries; want at most %d", peak, limit)
			}
			if calls, merchants := l.inFlight(); calls != tc.active || merchants != tc.active {
				t.Errorf("%d calls, %d merchants in flight; want %d each", calls, merchants, tc.active)
			}
			// An active merchant still holds its one slot: its entry was kept.
			for i := range min(tc.active, 10) {
				ctx, cancel := context.WithCancel(merchantCtx(fmt.Sprint("active", i)))
				cancel()
				if _, err := l.Hold(ctx); err == nil {
					t.Fatalf("active merchant %d got a second slot beyond its bound of 1", i)
				}
			}
			for _, h := range held {
				h.Release()
			}
		})
	}
}
