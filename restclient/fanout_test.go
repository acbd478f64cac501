package restclient

// The bounded fan-out (fanout.go) against an httptest REST API that counts
// the calls it gets and the most it held at once.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"paygraph/internal/testenv"
)

// peakServer answers a payment for every /api/v1/payments/{id} (404 for
// ids starting "pay_missing"), the link and session bodies for their
// routes (when hold is set, once it is closed), and
// records the calls it got and the most in flight at once.
type peakServer struct {
	*testServer
	inFlight, peak atomic.Int64
}

func newPeakServer(t *testing.T, hold chan struct{}) *peakServer {
	return peakServerOn(t, newTestServer, hold)
}

// peakServerOn is newPeakServer on a server made by serve (newTestServer
// or newMemServer).
func peakServerOn(t *testing.T, serve func(*testing.T, http.HandlerFunc) *testServer, hold chan struct{}) *peakServer {
	s := &peakServer{}
	s.testServer = serve(t, func(w http.ResponseWriter, r *http.Request) {
		n := s.inFlight.Add(1)
		defer s.inFlight.Add(-1)
		for p := s.peak.Load(); n > p && !s.peak.CompareAndSwap(p, n); p = s.peak.Load() {
		}
		if hold != nil {
			<-hold
		}
		w.Header().Set("Content-Type", "application/json")
		path := r.URL.Path
		switch {
		case strings.HasPrefix(path, "/api/v1/payments/pay_missing"):
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":"Payment not found"}`))
		case strings.HasPrefix(path, "/api/v1/payments/"):
			paymentWithID(w, strings.TrimPrefix(path, "/api/v1/payments/"))
		case strings.HasPrefix(path, "/api/v1/payment-links/"):
			_, _ = w.Write([]byte(linkNullsBody))
		default:
			_, _ = w.Write([]byte(sessionBody))
		}
	})
	return s
}

// settled waits, inside a synctest bubble, until every goroutine of the
// bubble is blocked (whatever could start has started), then wants cond.
func settled(t *testing.T, what string, cond func() bool) {
	t.Helper()
	synctest.Wait()
	if !cond() {
		t.Fatalf("once every goroutine waits: not %s", what)
	}
}

func payIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = "pay_" + strings.Repeat("x", i+1)
	}
	return ids
}

func TestFanOut(t *testing.T) {
	t.Run("every id answered in its place, errors per id", func(t *testing.T) {
		srv := newPeakServer(t, nil)
		c := newClient(t, Config{BaseURL: srv.URL})
		ids := []string{"pay_a", "pay_missing1", "pay_b", "bad/../id\x00"}
		rs := c.GetPayments(credCtx(), ids)
		if len(rs) != len(ids) {
			t.Fatalf("%d results for %d ids", len(rs), len(ids))
		}
		for _, i := range []int{0, 2} {
			if rs[i].Err != nil || rs[i].Value == nil || rs[i].Value.ID != ids[i] {
				t.Errorf("results[%d] = %+v, %v; want payment %s", i, rs[i].Value, rs[i].Err, ids[i])
			}
		}
		if k, _ := kindOf(rs[1].Err); k != KindNotFound || rs[1].Value != nil {
			t.Errorf("results[1] = %v, %v; want KindNotFound", rs[1].Value, rs[1].Err)
		}
		if k, _ := kindOf(rs[3].Err); k != KindInvalidID {
			t.Errorf("results[3] = %v; want KindInvalidID", rs[3].Err)
		}
		if got := srv.calls.Load(); got != 3 {
			t.Errorf("REST calls = %d, want 3 (the invalid id makes none)", got)
		}
	})

	t.Run("payment links and checkout sessions", func(t *testing.T) {
		srv := newPeakServer(t, nil)
		c := newClient(t, Config{BaseURL: srv.URL, ShareWaiters: -1}) // no call in flight shared
		links := c.GetPaymentLinks(credCtx(), []string{"pl_abc123", "pl_abc123"})
		sessions := c.GetCheckoutSessions(credCtx(), []string{"REF12345"})
		if len(links) != 2 || links[0].Err != nil || links[1].Err != nil || links[0].Value.ID != "pl_abc123" {
			t.Errorf("links = %+v", links)
		}
		if len(sessions) != 1 || sessions[0].Err != nil || sessions[0].Value.Reference != "REF12345" {
			t.Errorf("sessions = %+v", sessions)
		}
		if got := srv.calls.Load(); got != 3 {
			t.Errorf("REST calls = %d, want 3 (a fan-out does not dedupe; the loaders do)", got)
		}
	})

	for _, tc := range []struct {
		name        string
		requestMax  int // 0: no request bound in the context
		merchantMax int
		ids         int
		wantPeak    int64
	}{
		{"the request's bound holds", 4, 64, 40, 4},
		{"the merchant's bound holds", 0, 3, 30, 3},
		{"the narrower of the two holds", 8, 5, 30, 5},
		{"a batch within its bounds starts at once", 16, 64, 12, 12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) { fanOutPeak(t, tc.requestMax, tc.merchantMax, tc.ids, tc.wantPeak) })
		})
	}

	t.Run("a batch waiting for slots costs one goroutine, not one per id", func(t *testing.T) {
		synctest.Test(t, batchGoroutines)
	})

	t.Run("a done context answers every id without a call", func(t *testing.T) {
		srv := newPeakServer(t, nil)
		c := newClient(t, Config{BaseURL: srv.URL})
		ctx, cancel := context.WithCancel(credCtx())
		cancel()
		for i, r := range c.GetPayments(ctx, payIDs(10)) {
			if k, _ := kindOf(r.Err); k != KindCanceled {
				t.Errorf("results[%d] = %v, want KindCanceled", i, r.Err)
			}
		}
		if got := srv.calls.Load(); got != 0 {
			t.Errorf("REST calls = %d, want 0", got)
		}
	})

	t.Run("a refused pair makes one call for the whole batch", func(t *testing.T) {
		srv := authServer(t, nil)
		c := gatedClient(t, srv.URL, UnacceptedConfig{CallsPerSecond: 1000, RefusedTTL: time.Hour})
		ids := make([]string, 100)
		for i := range ids {
			ids[i] = goodID
		}
		for i, r := range c.GetPayments(invented(7), ids) {
			if k, _ := kindOf(r.Err); k != KindUnauthorized {
				t.Errorf("results[%d] = %v, want KindUnauthorized", i, r.Err)
			}
		}
		if got := srv.calls.Load(); got != 1 {
			t.Errorf("REST calls for a refused pair's 100 lookups = %d, want 1", got)
		}
	})

	t.Run("without credentials no call and no slot", func(t *testing.T) {
		srv := newPeakServer(t, nil)
		c := newClient(t, Config{BaseURL: srv.URL})
		for i, r := range c.GetPayments(context.Background(), payIDs(5)) {
			if k, _ := kindOf(r.Err); k != KindUnauthorized {
				t.Errorf("results[%d] = %v, want KindUnauthorized", i, r.Err)
			}
		}
		if got := srv.calls.Load(); got != 0 {
			t.Errorf("REST calls = %d, want 0", got)
		}
		if calls, merchants := c.limiter.inFlight(); calls != 0 || merchants != 0 {
			t.Errorf("%d slots held, %d merchants, want none", calls, merchants)
		}
	})

	t.Run("a panicking call is its id's PanicError", func(t *testing.T) {
		rs := Each(context.Background(), []string{"a", "boom", "c"}, func(_ context.Context, id string) (string, error) {
			if id == "boom" {
				panic("kaboom")
			}
			return id + "!", nil
		})
		var pe *PanicError
		if !errors.As(rs[1].Err, &pe) || pe.Value != "kaboom" {
			t.Errorf("results[1].Err = %v, want a PanicError of kaboom", rs[1].Err)
		}
		if rs[0].Value != "a!" || rs[2].Value != "c!" || rs[0].Err != nil || rs[2].Err != nil {
			t.Errorf("results = %+v, want the others answered", rs)
		}
	})
}

// heldGetter records, by id, whether each call's context held a slot
// taken ahead of it (Limiter.Hold).
type heldGetter struct {
	mu   sync.Mutex
	held map[string]bool
}

func (g *heldGetter) get(ctx context.Context, id string) (string, error) {
	h, _ := ctx.Value(heldKey{}).(*Held)
	g.mu.Lock()
	g.held[id] = h != nil
	g.mu.Unlock()
	return id, nil
}

// TestFanOutCallerTakesItsOwnSlots: the caller's goroutine makes calls of
// its fan-out as plain calls (each takes its slot in Client.do), so a
// batch of one id is one plain call with nothing held ahead; a goroutine
// started for the others holds its first call's slot ahead; every slot is
// given back.
func TestFanOutCallerTakesItsOwnSlots(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		ids     []string
		maxHeld int // calls that held their slot ahead, at most
	}{
		{"one id", []string{"pay_1"}, 0},
		{"three ids", []string{"pay_1", "pay_2", "pay_3"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			lim := NewLimiter(LimiterConfig{})
			g := &heldGetter{held: map[string]bool{}}
			got := fanOut(credCtx(), lim, tc.ids, g)
			for i, r := range got {
				if r.Value != tc.ids[i] || r.Err != nil {
					t.Errorf("result %d: %+v", i, r)
				}
			}
			held := 0
			for _, h := range g.held {
				if h {
					held++
				}
			}
			if len(g.held) != len(tc.ids) || held > tc.maxHeld {
				t.Errorf("held ahead %v, want %d calls, at most %d held ahead", g.held, len(tc.ids), tc.maxHeld)
			}
			if calls, _ := lim.inFlight(); calls != 0 {
				t.Errorf("%d slots left held", calls)
			}
		})
	}
}

// TestFanOutWaitsInItsRequestsTurn: a fan-out's goroutines wait for their
// merchant's slots one at a time (Limiter.queue), so another request of
// the merchant that comes while two of them wait is served after one of
// them, not after both: a freed slot goes to the waiting requests in turn.
func TestFanOutWaitsInItsRequestsTurn(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		step := make(chan struct{})
		release := make(chan struct{})
		var mu sync.Mutex
		var arrived []string
		srv := newMemServer(t, func(w http.ResponseWriter, r *http.Request) {
			id := strings.TrimPrefix(r.URL.Path, "/api/v1/payments/")
			mu.Lock()
			arrived = append(arrived, id)
			mu.Unlock()
			select {
			case <-step:
			case <-release:
			}
			w.Header().Set("Content-Type", "application/json")
			paymentWithID(w, id)
		})
		defer close(release)
		arrivals := func() int { mu.Lock(); defer mu.Unlock(); return len(arrived) }
		lim := NewLimiter(LimiterConfig{MaxInFlightPerMerchant: 2})
		c := newClient(t, Config{BaseURL: srv.URL, HTTPClient: srv.hc, Limiter: lim})
		ctx := credCtx()

		// Request A: 10 ids, 4 at a time; its first two calls take the
		// merchant's two slots.
		doneA := make(chan []Result[*Payment], 1)
		go func() { doneA <- c.GetPayments(WithRequestLimit(ctx, 4), payIDs(10)) }()
		settled(t, "2 arrivals", func() bool { return arrivals() == 2 })
		// One answered: its slot goes to A's third call, and then A has two
		// calls holding slots and two waiting (4 = its bound).
		step <- struct{}{}
		settled(t, "3 arrivals, 4 slots of the merchant", func() bool { return arrivals() == 3 && lim.refs(ctx) == 4 })
		// Request B comes while A's two wait.
		doneB := make(chan error, 1)
		go func() {
			_, err := c.GetPayment(WithRequestLimit(ctx, 4), "pay_B")
			doneB <- err
		}()
		settled(t, "5 slots of the merchant", func() bool { return lim.refs(ctx) == 5 })
		step <- struct{}{}
		settled(t, "4 arrivals", func() bool { return arrivals() == 4 })
		step <- struct{}{}
		settled(t, "5 arrivals", func() bool { return arrivals() == 5 })
		mu.Lock()
		order := slices.Clone(arrived)
		mu.Unlock()
		if order[3] == "pay_B" || order[4] != "pay_B" {
			t.Errorf("calls arrived in the order %v; want B's fifth: after one of A's two waiting calls, not both", order)
		}
		close(step)
		if err := <-doneB; err != nil {
			t.Errorf("B: %v", err)
		}
		for i, r := range <-doneA {
			if r.Err != nil {
				t.Errorf("A's results[%d]: %v", i, r.Err)
			}
		}
		if calls, merchants := lim.inFlight(); calls != 0 || merchants != 0 {
			t.Errorf("after both: %d slots held, %d merchants, want none", calls, merchants)
		}
	})
}

// fanOutPeak is one case of TestFanOut's bounds, in a synctest bubble:
// ids fetched at once under the bounds, the first wave held at the
// server until every goroutine waits; the REST API must see wantPeak at
// once, and no more.
func fanOutPeak(t *testing.T, requestMax, merchantMax, ids int, wantPeak int64) {
	hold := make(chan struct{})
	srv := peakServerOn(t, newMemServer, hold)
	c := newClient(t, Config{BaseURL: srv.URL, HTTPClient: srv.hc, Limiter: NewLimiter(LimiterConfig{MaxInFlightPerMerchant: merchantMax})})

	ctx := credCtx()
	if requestMax > 0 {
		ctx = WithRequestLimit(ctx, requestMax)
	}
	done := make(chan []Result[*Payment])
	go func() { done <- c.GetPayments(ctx, payIDs(ids)) }()
	// Every call that can start has started, and is held at the server:
	// one beyond the bound would show here.
	settled(t, fmt.Sprintf("%d calls in flight", wantPeak), func() bool { return srv.inFlight.Load() == wantPeak })
	close(hold)
	rs := <-done
	for i, r := range rs {
		if r.Err != nil {
			t.Fatalf("results[%d]: %v", i, r.Err)
		}
	}
	if got := srv.calls.Load(); got != int64(ids) {
		t.Errorf("REST calls = %d, want %d", got, ids)
	}
	if got := srv.peak.Load(); got != wantPeak {
		t.Errorf("peak concurrency at the REST API = %d, want %d", got, wantPeak)
	}
	if calls, merchants := c.limiter.inFlight(); calls != 0 || merchants != 0 {
		t.Errorf("after the fan-out: %d slots held, %d merchants, want none", calls, merchants)
	}
}

// batchGoroutines is TestFanOut's goroutine count, in a synctest bubble
// with the REST API in memory (no server or transport goroutines).
func batchGoroutines(t *testing.T) {
	hold := make(chan struct{})
	srv := peakServerOn(t, newMemServer, hold)
	c := newClient(t, Config{BaseURL: srv.URL, HTTPClient: srv.hc})
	before := testenv.BubbleGoroutines()
	done := make(chan []Result[*Payment])
	go func() { done <- c.GetPayments(WithRequestLimit(credCtx(), 2), payIDs(100)) }()
	settled(t, "2 calls in flight", func() bool { return srv.inFlight.Load() == 2 }) // what else would start, has started
	// The caller and its calls held at the REST API; a goroutine
	// per id would be 100.
	if grew := testenv.BubbleGoroutines() - before; grew > 3 {
		t.Errorf("goroutines grew by %d while 98 ids wait for a slot, want at most 3", grew)
	}
	close(hold)
	rs := <-done
	for i, r := range rs {
		if r.Err != nil {
			t.Fatalf("results[%d]: %v", i, r.Err)
		}
	}
	if got := srv.peak.Load(); got != 2 {
		t.Errorf("peak concurrency = %d, want 2", got)
	}
}
