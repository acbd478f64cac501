package restclient

// Shared calls in flight (share.go), in synctest bubbles with the REST
// API in memory: who shares, who never does, and each caller's deadline.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// pairServer answers every payment id with a payment whose customer name
// is the asking pair's API key, after hold (nil: at once); ids starting
// with "pay_missing" are a 404, "pay_garbage" a 2xx that is no JSON.
type pairServer struct {
	*testServer
	hold chan struct{}
}

func newPairServer(t *testing.T) *pairServer {
	s := &pairServer{hold: make(chan struct{})}
	s.testServer = newMemServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-s.hold:
		case <-r.Context().Done():
			return
		}
		id := strings.TrimPrefix(r.URL.Path, "/api/v1/payments/")
		switch {
		case strings.HasPrefix(id, "pay_missing"):
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":"Payment not found"}`))
			return
		case strings.HasPrefix(id, "pay_garbage"):
			_, _ = w.Write([]byte(`{"id":`))
			return
		}
		bid, _ := json.Marshal(id)
		name, _ := json.Marshal(r.Header.Get(HeaderAPIKey))
		fmt.Fprintf(w, `{"id":%s,"status":"PENDING","amount":1,"customer":{"name":%s},"created_at":"2026-11-21T09:30:00Z","updated_at":"2026-11-21T09:30:00Z"}`, bid, name)
	})
	return s
}

// asker is one caller of a shared-calls case: its pair and id.
type asker struct {
	pair, id string
}

type answer struct {
	p   *Payment
	err error
	log *CallLog
}

// ask starts each asker's GetPayment one after the other, each once the
// ones before it wait (so the first makes the call), and returns their
// answers once hold is closed.
func ask(t *testing.T, c *Client, srv *pairServer, askers []asker) []answer {
	t.Helper()
	out := make([]answer, len(askers))
	var wg sync.WaitGroup
	for i, a := range askers {
		out[i].log = new(CallLog)
		ctx := WithCallLog(merchantCtx(a.pair), out[i].log)
		wg.Go(func() { out[i].p, out[i].err = c.GetPayment(ctx, a.id) })
		synctest.Wait()
	}
	close(srv.hold)
	wg.Wait()
	return out
}

func TestSharedCalls(t *testing.T) {
	t.Parallel()
	many := func(n int, pair, id string) []asker {
		as := make([]asker, n)
		for i := range as {
			as[i] = asker{pair, id}
		}
		return as
	}
	for _, tc := range []struct {
		name    string
		waiters int // Config.ShareWaiters
		askers  []asker
		calls   int64 // REST calls made
		shared  int   // the askers' calls answered by another's
	}{
		{"one pair, one id: one call", 0, many(8, "a", "pay_1"), 1, 7},
		{"two pairs, one id: never shared", 0, []asker{{"a", "pay_1"}, {"b", "pay_1"}, {"a", "pay_1"}, {"b", "pay_1"}}, 2, 2},
		{"one pair, two ids: one call each", 0, []asker{{"a", "pay_1"}, {"a", "pay_2"}, {"a", "pay_1"}}, 2, 1},
		{"waiters bounded: the rest make their own", 2, many(5, "a", "pay_1"), 3, 2},
		{"sharing off", -1, many(4, "a", "pay_1"), 4, 0},
		{"an error: one call, each its own copy", 0, many(4, "a", "pay_missing"), 1, 3},
		{"a faulty answer: one call, each its own error", 0, many(4, "a", "pay_garbage"), 1, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				srv := newPairServer(t)
				c := newClient(t, Config{BaseURL: srv.URL, HTTPClient: srv.hc, ShareWaiters: tc.waiters})
				out := ask(t, c, srv, tc.askers)
				if got := srv.calls.Load(); got != tc.calls {
					t.Errorf("REST calls = %d, want %d", got, tc.calls)
				}
				shared, made := 0, 0
				for i, a := range out {
					m, _ := a.log.Counts()
					shared += a.log.Shared()
					made += m
					want := "ak_test_" + tc.askers[i].pair
					switch {
					case strings.HasPrefix(tc.askers[i].id, "pay_missing"):
						if KindOf(a.err) != KindNotFound {
							t.Errorf("asker %d: %v, want KindNotFound", i, a.err)
						}
					case strings.HasPrefix(tc.askers[i].id, "pay_garbage"):
						if KindOf(a.err) != KindUpstream {
							t.Errorf("asker %d: %v, want KindUpstream", i, a.err)
						}
					case a.err != nil:
						t.Errorf("asker %d: %v", i, a.err)
					case a.p.ID != tc.askers[i].id || a.p.Customer.Name == nil || *a.p.Customer.Name != want:
						t.Errorf("asker %d of pair %s got %s of %v", i, tc.askers[i].pair, a.p.ID, a.p.Customer.Name)
					}
					for j := range i {
						if a.p != nil && a.p == out[j].p || a.err != nil && a.err == out[j].err {
							t.Errorf("askers %d and %d got the same value", j, i)
						}
						if a.p != nil && out[j].p != nil && a.p.Customer.Name == out[j].p.Customer.Name {
							t.Errorf("askers %d and %d share the customer's name", j, i)
						}
					}
				}
				if shared != tc.shared || made != int(tc.calls) {
					t.Errorf("call logs: %d made, %d shared; want %d and %d", made, shared, tc.calls, tc.shared)
				}
				if len(c.flights.table()) != 0 {
					t.Error("calls left in the table after their answers")
				}
			})
		})
	}
}

// TestSharedCallsNeverAfterTheAnswer: a call asked for once the answer
// has come makes its own.
func TestSharedCallsNeverAfterTheAnswer(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		srv := newPairServer(t)
		close(srv.hold)
		c := newClient(t, Config{BaseURL: srv.URL, HTTPClient: srv.hc})
		for range 3 {
			if _, err := c.GetPayment(merchantCtx("a"), "pay_1"); err != nil {
				t.Fatal(err)
			}
		}
		if got := srv.calls.Load(); got != 3 {
			t.Errorf("REST calls = %d, want 3", got)
		}
	})
}

// TestSharedCallsNotForUnacceptedPairs: a pair's probe (its first call,
// before the REST API has accepted it) is nobody's to share.
func TestSharedCallsNotForUnacceptedPairs(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		srv := newPairServer(t)
		l := NewLimiter(LimiterConfig{Unaccepted: UnacceptedConfig{CallsPerSecond: 100}})
		c := newClient(t, Config{BaseURL: srv.URL, HTTPClient: srv.hc, Limiter: l})
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				if _, err := c.GetPayment(merchantCtx("new"), "pay_1"); err != nil {
					t.Error(err)
				}
			})
		}
		synctest.Wait()
		if n := len(c.flights.table()); n != 0 {
			t.Errorf("%d shared calls while the pair is not accepted, want none", n)
		}
		close(srv.hold)
		wg.Wait()
		if got := srv.calls.Load(); got < 2 {
			t.Errorf("REST calls = %d: the probe was shared", got)
		}
	})
}

// TestSharedCallDeadlines: each caller keeps its own deadline. A waiter
// that leaves leaves the call going on; when the maker leaves, its call
// ends with it and a waiter makes the call itself.
func TestSharedCallDeadlines(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		deadlines []time.Duration // each caller's, in the order they ask; the first makes the call
		answerIn  time.Duration   // the REST API's latency
		answered  []bool          // each caller gets the answer (else its timeout)
		calls     int64           // REST calls made
		canceled  time.Duration   // when the last REST request was canceled; 0: none was
	}{
		{"a waiter leaves, the maker gets the answer", []time.Duration{5 * time.Second, time.Second}, 3 * time.Second, []bool{true, false}, 1, 0},
		{"the maker leaves, the waiter calls again", []time.Duration{time.Second, 5 * time.Second}, 3 * time.Second, []bool{false, true}, 2, time.Second},
		{"all leave, each at its own deadline", []time.Duration{time.Second, 2 * time.Second}, time.Hour, []bool{false, false}, 2, 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				var ended atomic.Int64 // when a REST request's context ended, from start
				srv := newMemServer(t, func(w http.ResponseWriter, r *http.Request) {
					select {
					case <-time.After(tc.answerIn):
						paymentWithID(w, "pay_1")
					case <-r.Context().Done():
						ended.Store(int64(time.Since(start)))
					}
				})
				l := NewLimiter(LimiterConfig{})
				c := newClient(t, Config{BaseURL: srv.URL, HTTPClient: srv.hc, Limiter: l})
				errs := make([]error, len(tc.deadlines))
				at := make([]time.Duration, len(tc.deadlines))
				var wg sync.WaitGroup
				for i, d := range tc.deadlines {
					ctx, cancel := context.WithTimeout(merchantCtx("a"), d)
					defer cancel()
					wg.Go(func() {
						_, errs[i] = c.GetPayment(ctx, "pay_1")
						at[i] = time.Since(start)
					})
					synctest.Wait()
				}
				wg.Wait()
				for i, err := range errs {
					if tc.answered[i] && err != nil || !tc.answered[i] && KindOf(err) != KindTimeout {
						t.Errorf("caller %d: %v, want answered %v", i, err, tc.answered[i])
					}
					if !tc.answered[i] && at[i] != tc.deadlines[i] {
						t.Errorf("caller %d answered at %v, want its deadline %v", i, at[i], tc.deadlines[i])
					}
				}
				synctest.Wait()
				if got := time.Duration(ended.Load()); got != tc.canceled {
					t.Errorf("REST request canceled at %v, want %v (0: never)", got, tc.canceled)
				}
				if got := srv.calls.Load(); got != tc.calls {
					t.Errorf("REST calls = %d, want %d", got, tc.calls)
				}
				if calls, _ := l.inFlight(); calls != 0 {
					t.Errorf("%d slots held after the calls, want 0", calls)
				}
			})
		})
	}
}

// TestSharedCallsWaitOnlyForCallsUnderWay: a call enters the table only
// once its maker holds a slot, so that a waiter holding a slot of its
// own (a fan-out's, taken ahead) never waits for a maker that waits for
// that slot.
func TestSharedCallsWaitOnlyForCallsUnderWay(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		srv := newPairServer(t)
		close(srv.hold)
		l := NewLimiter(LimiterConfig{MaxInFlightPerMerchant: 1})
		c := newClient(t, Config{BaseURL: srv.URL, HTTPClient: srv.hc, Limiter: l})
		h, err := c.Hold(merchantCtx("a")) // the pair's only slot
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Go(func() { // waits for the slot
			if _, err := c.GetPayment(merchantCtx("a"), "pay_1"); err != nil {
				t.Error(err)
			}
		})
		synctest.Wait()
		if n := len(c.flights.table()); n != 0 {
			t.Fatalf("%d calls in the table while their makers wait for a slot", n)
		}
		done := make(chan error, 1)
		go func() { _, err := c.GetPayment(h, "pay_1"); done <- err }()
		synctest.Wait()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatal("the call with the slot held waits for the one waiting for that slot")
		}
		h.Release()
		wg.Wait()
		if got := srv.calls.Load(); got != 2 {
			t.Errorf("REST calls = %d, want 2", got)
		}
	})
}
