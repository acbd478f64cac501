package livepoll

// Tests of provisional subscriptions (issue 22): a subscription of a pair
// the REST API has not accepted counts against SUBSCRIPTION_MAX and the
// per-merchant cap only once its key's first poll succeeded, and the
// provisional ones have their own small bound (MaxPending).

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"paygraph/internal/testenv"
)

var errRefused = errors.New("401 from the REST fake")

func refusedFetch(context.Context) (Snapshot, error) { return Snapshot{}, Permanent(errRefused) }

func okFetch(context.Context) (Snapshot, error) {
	return Snapshot{Value: "v", Fingerprint: "v", Phase: PhaseOpen}, nil
}

// heldFetch is a REST fake that holds every call until the poll ends.
func heldFetch(ctx context.Context) (Snapshot, error) {
	<-ctx.Done()
	return Snapshot{}, ctx.Err()
}

func newRealHub(t *testing.T, cfg Config) *Hub {
	t.Helper()
	cfg.Interval = cmpOr(cfg.Interval, time.Hour) // one poll per key in a test
	h, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

func cmpOr(a, b time.Duration) time.Duration {
	if a != 0 {
		return a
	}
	return b
}

func fakeKey(i int) Key {
	return Key{Merchant: "invented-" + strconv.Itoa(i), Kind: "payment", ID: "pay_" + strconv.Itoa(i)}
}

// drainEnd reads s to its end and returns its first event and Err.
func drainEnd(t *testing.T, s *Subscription) (Event, error) {
	t.Helper()
	var first Event
	n := 0
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-s.Events():
			if !ok {
				return first, s.Err()
			}
			if n == 0 {
				first = ev
			}
			n++
		case <-timeout:
			t.Fatal("the subscription did not end")
		}
	}
}

// fakes is how many invented credential pairs subscribe.
const fakes = 200

func TestProvisionalSubscriptions(t *testing.T) {
	t.Run("refused pairs are never counted and a merchant is admitted", func(t *testing.T) {
		// Before (every subscription counted at admission, SubscribeAfter):
		// fakes fill SUBSCRIPTION_MAX and the merchant is refused.
		before := newRealHub(t, Config{MaxSubscriptions: 50})
		var beforeRefused error
		var held []*Subscription
		for i := range fakes {
			s, err := before.SubscribeAfter(t.Context(), fakeKey(i), heldFetch, 0)
			if err != nil {
				beforeRefused = err
				break
			}
			held = append(held, s)
		}
		beforeCounted := before.Stats().Subscriptions
		for _, s := range held {
			s.Close()
		}
		if !errors.Is(beforeRefused, ErrTooManySubscriptions) {
			t.Fatalf("the old admission should reach the cap, got %v", beforeRefused)
		}

		h := newRealHub(t, Config{MaxSubscriptions: 50, MaxPending: fakes})
		maxCounted := 0
		var subs []*Subscription
		for i := range fakes {
			s, err := h.SubscribeProvisional(t.Context(), fakeKey(i), refusedFetch, 0)
			if err != nil {
				t.Fatalf("fake %d: %v", i, err)
			}
			subs = append(subs, s)
			maxCounted = max(maxCounted, h.Stats().Subscriptions)
		}
		for i, s := range subs {
			ev, err := drainEnd(t, s)
			if !errors.Is(err, errRefused) || !errors.Is(ev.Err, errRefused) {
				t.Fatalf("fake %d ended with %v (event %v), want the REST refusal", i, err, ev.Err)
			}
			maxCounted = max(maxCounted, h.Stats().Subscriptions)
		}
		if maxCounted != 0 {
			t.Fatalf("%d refused subscriptions were counted against SUBSCRIPTION_MAX", maxCounted)
		}
		if st := h.Stats(); st.Pending != 0 || st.Subscriptions != 0 {
			t.Fatalf("after the refusals: %+v, want nothing live", st)
		}
		real, err := h.SubscribeProvisional(t.Context(), Key{Merchant: "real", Kind: "payment", ID: "pay_1"}, okFetch, 0)
		if err != nil {
			t.Fatalf("the real merchant was refused: %v", err)
		}
		if ev := <-real.Events(); ev.Err != nil || ev.Snapshot.Value != "v" {
			t.Fatalf("the real merchant's first event: %+v", ev)
		}
		if st := h.Stats(); st.Subscriptions != 1 || st.Pending != 0 {
			t.Fatalf("after the merchant's first poll: %+v, want 1 counted", st)
		}
		t.Logf("%d invented pairs, SUBSCRIPTION_MAX 50: before, %d counted and the merchant refused (%v); now, at most %d counted, the merchant admitted and counted after its first poll",
			fakes, beforeCounted, beforeRefused, maxCounted)
	})

	t.Run("pending subscriptions are bounded and do not hold a merchant back", func(t *testing.T) {
		// In a bubble the goroutines counted are this test's alone.
		synctest.Test(t, pendingBounded)
	})

	t.Run("the first successful poll counts it", func(t *testing.T) {
		h := newRealHub(t, Config{})
		s, err := h.SubscribeProvisional(t.Context(), fakeKey(1), okFetch, 0)
		if err != nil {
			t.Fatal(err)
		}
		<-s.Events()
		if st := h.Stats(); st.Subscriptions != 1 || st.Pending != 0 {
			t.Fatalf("%+v, want 1 counted, 0 pending", st)
		}
		// A second subscriber of the observed key counts at once.
		s2, err := h.SubscribeProvisional(t.Context(), fakeKey(1), okFetch, 0)
		if err != nil {
			t.Fatal(err)
		}
		if st := h.Stats(); st.Subscriptions != 2 || st.Pending != 0 {
			t.Fatalf("%+v, want 2 counted", st)
		}
		s.Close()
		s2.Close()
		if st := h.Stats(); st.Subscriptions != 0 || st.Pending != 0 {
			t.Fatalf("%+v after Close, want none", st)
		}
	})

	t.Run("a cap reached at promotion ends it with the limit", func(t *testing.T) {
		h := newRealHub(t, Config{MaxSubscriptions: 1})
		if _, err := h.SubscribeAfter(t.Context(), Key{Merchant: "real", Kind: "payment", ID: "pay_1"}, okFetch, 0); err != nil {
			t.Fatal(err)
		}
		s, err := h.SubscribeProvisional(t.Context(), fakeKey(2), okFetch, 0)
		if err != nil {
			t.Fatalf("a provisional subscription is admitted beside a full cap: %v", err)
		}
		_, err = drainEnd(t, s)
		var le *LimitError
		if !errors.As(err, &le) || le.Scope != ScopeProcess {
			t.Fatalf("ended with %v, want the process limit", err)
		}
		if st := h.Stats(); st.Subscriptions != 1 || st.Pending != 0 {
			t.Fatalf("%+v, want the one counted", st)
		}
	})
}

// pendingBounded holds 200 invented pairs' polls at the REST fake, in a
// synctest bubble: 16 pending, the rest refused at once, none counted,
// an accepted merchant admitted beside them, and every goroutine gone
// once they end.
func pendingBounded(t *testing.T) {
	base := testenv.BubbleGoroutines()
	const pending = 16
	h := newRealHub(t, Config{MaxSubscriptions: 4, MaxPending: pending})
	ctx, cancel := context.WithCancel(t.Context())
	refused := 0
	for i := range fakes {
		_, err := h.SubscribeProvisional(ctx, fakeKey(i), heldFetch, 0)
		var le *LimitError
		switch {
		case err == nil:
		case errors.As(err, &le) && le.Scope == ScopePending && le.Limit == pending:
			refused++
		default:
			t.Fatalf("fake %d: %v", i, err)
		}
	}
	st := h.Stats()
	during := testenv.BubbleGoroutines() - base
	if st.Pending != pending || st.Subscriptions != 0 || st.Pollers != pending || refused != fakes-pending {
		t.Fatalf("with %d held fakes: %+v, %d refused; want %d pending, 0 counted", fakes, st, refused, pending)
	}
	real, err := h.SubscribeAfter(t.Context(), Key{Merchant: "real", Kind: "payment", ID: "pay_1"}, okFetch, 0)
	if err != nil {
		t.Fatalf("an accepted merchant was refused beside pending fakes: %v", err)
	}
	if ev := <-real.Events(); ev.Err != nil {
		t.Fatalf("the merchant's first event: %v", ev.Err)
	}
	real.Close()
	cancel()
	synctest.Wait()
	after := testenv.BubbleGoroutines()
	if after > base {
		t.Fatalf("goroutines: %d before, %d after the fakes ended", base, after)
	}
	t.Logf("%d invented pairs held by the REST fake: %d pending (bound %d), %d refused at once, 0 counted, %d more goroutines while held (before: every one counted until SUBSCRIPTION_MAX, one poller each, the cap then full); goroutines back to %d (baseline %d)",
		fakes, st.Pending, pending, refused, during, after, base)
}
