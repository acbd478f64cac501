package restclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"paygraph/internal/testenv"
)

// wouldWait reports whether a call with ctx would have to wait for a
// slot: it tries with ctx already cancelled, which takes a free slot but
// never waits. A slot it took is given back.
func wouldWait(t *testing.T, l *Limiter, ctx context.Context) bool {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	cancel()
	h, err := l.Hold(ctx)
	if err != nil {
		if KindOf(err) != KindCanceled {
			t.Fatalf("Hold on a cancelled context: %v, want KindCanceled", err)
		}
		return true
	}
	h.Release()
	return false
}

func hold(t *testing.T, l *Limiter, ctx context.Context) *Held {
	t.Helper()
	h, err := l.Hold(ctx)
	if err != nil {
		t.Fatalf("Hold: %v", err)
	}
	t.Cleanup(h.Release)
	return h
}

// refs is how many calls hold or wait for a slot of ctx's merchant.
func (l *Limiter) refs(ctx context.Context) int {
	cv, _ := credentialsFrom(ctx)
	l.mu.Lock()
	defer l.mu.Unlock()
	if m := l.merchants[cv.merchant]; m != nil {
		return m.refs
	}
	return 0
}

func TestLimiterBounds(t *testing.T) {
	t.Parallel()
	a, b, c := merchantCtx("a"), merchantCtx("b"), merchantCtx("c")
	for _, tc := range []struct {
		name  string
		cfg   LimiterConfig
		held  []context.Context // slots taken first
		waits []context.Context // then each of these would wait
		free  []context.Context // and each of these would not
	}{
		{"a merchant gets its share and no more", LimiterConfig{MaxInFlight: 4, MaxInFlightPerMerchant: 2},
			[]context.Context{a, a}, []context.Context{a}, []context.Context{b, c}},
		{"the process pool bounds every merchant", LimiterConfig{MaxInFlight: 3, MaxInFlightPerMerchant: 2},
			[]context.Context{a, a, b}, []context.Context{a, b, c}, nil},
		{"a share above the pool is the pool", LimiterConfig{MaxInFlight: 2, MaxInFlightPerMerchant: 5},
			[]context.Context{a, a}, []context.Context{a, b}, nil},
		{"no credentials hold nothing", LimiterConfig{MaxInFlight: 1},
			[]context.Context{context.Background(), context.Background(), a}, []context.Context{b}, []context.Context{context.Background()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := NewLimiter(tc.cfg)
			for _, ctx := range tc.held {
				hold(t, l, ctx)
			}
			for i, ctx := range tc.waits {
				if !wouldWait(t, l, ctx) {
					t.Errorf("waits[%d] got a slot", i)
				}
			}
			for i, ctx := range tc.free {
				if wouldWait(t, l, ctx) {
					t.Errorf("free[%d] would wait", i)
				}
			}
		})
	}

	t.Run("one request holds at most its limit", func(t *testing.T) {
		l := NewLimiter(LimiterConfig{MaxInFlight: 8, MaxInFlightPerMerchant: 8})
		req1 := WithRequestLimit(a, 2)
		hold(t, l, req1)
		hold(t, l, context.WithValue(req1, derivedKey{}, "a context derived from the request's"))
		if !wouldWait(t, l, req1) {
			t.Error("a third call of the request got a slot")
		}
		if wouldWait(t, l, WithRequestLimit(a, 2)) {
			t.Error("another request of the same merchant would wait")
		}
	})
}

func TestLimiterWaiting(t *testing.T) {
	t.Parallel()
	a, b := merchantCtx("a"), merchantCtx("b")
	for _, tc := range []struct {
		name string
		cfg  LimiterConfig
		// full holds the only slot the waiter could have; made inside the
		// case's bubble, so that a wait on its request's slots is one the
		// fake clock sees.
		full   func() context.Context
		waiter context.Context
		// waiting: the waiter's merchant count once it waits (0: cannot be
		// seen; the deadline then ends the wait).
		waiting  int
		end      string // "cancel", "deadline" or "release"
		wantKind ErrorKind
	}{
		{"cancelled while waiting for its merchant", LimiterConfig{MaxInFlight: 4, MaxInFlightPerMerchant: 1}, func() context.Context { return a }, a, 2, "cancel", KindCanceled},
		{"cancelled while waiting for the process", LimiterConfig{MaxInFlight: 1}, func() context.Context { return a }, b, 1, "cancel", KindCanceled},
		{"deadline while waiting for its request", LimiterConfig{}, func() context.Context { return WithRequestLimit(a, 1) }, nil, 0, "deadline", KindTimeout},
		{"given the slot when it is released", LimiterConfig{MaxInFlight: 4, MaxInFlightPerMerchant: 1}, func() context.Context { return a }, a, 2, "release", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				l := NewLimiter(tc.cfg)
				fullCtx := tc.full()
				full := hold(t, l, fullCtx)
				waiter := tc.waiter
				if waiter == nil {
					waiter = fullCtx
				}
				ctx, cancel := context.WithCancel(waiter)
				defer cancel()
				if tc.end == "deadline" {
					ctx, cancel = context.WithTimeout(waiter, time.Millisecond)
					defer cancel()
				}
				got := make(chan error, 1)
				go func() {
					h, err := l.Hold(ctx)
					h.Release()
					got <- err
				}()
				if tc.waiting > 0 {
					synctest.Wait() // the waiter is blocked in Hold
					if n := l.refs(waiter); n != tc.waiting {
						t.Fatalf("the waiter's merchant counts %d while it waits, want %d", n, tc.waiting)
					}
				}
				switch tc.end {
				case "cancel":
					cancel()
				case "release":
					full.Release()
				}
				err := <-got
				if tc.end == "release" {
					if err != nil {
						t.Fatalf("Hold: %v, want the released slot", err)
					}
				} else if e := (*Error)(nil); !errors.As(err, &e) || e.Kind != tc.wantKind {
					t.Fatalf("Hold: %v, want a *Error of kind %v", err, tc.wantKind)
				}
				full.Release()
				if calls, merchants := l.inFlight(); calls != 0 || merchants != 0 {
					t.Errorf("after everything was released: %d calls in flight, %d merchants known; want none", calls, merchants)
				}
			})
		})
	}
}

// TestLimiterInClient: every call of a Client holds a slot for as long as
// it runs, gives it back however it ends, and a slot held ahead of a call
// (Hold) serves that call only.
func TestLimiterInClient(t *testing.T) {
	t.Parallel()
	var l *Limiter
	var mu sync.Mutex
	var seenInFlight []int
	srv := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		calls, _ := l.inFlight()
		mu.Lock()
		seenInFlight = append(seenInFlight, calls)
		mu.Unlock()
		switch r.URL.Path {
		case "/api/v1/payments/pay_500":
			w.WriteHeader(http.StatusInternalServerError)
		default:
			// The record asked for: the client refuses another id.
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(strings.Replace(paymentBody, "pay_prod_0123456789abcdef0123456789abcdef", path.Base(r.URL.Path), 1)))
		}
	})
	inFlightSeen := func() []int {
		mu.Lock()
		defer mu.Unlock()
		out := seenInFlight
		seenInFlight = nil
		return out
	}
	newLimited := func(t *testing.T, rt http.RoundTripper) *Client {
		l = NewLimiter(LimiterConfig{MaxInFlight: 4, MaxInFlightPerMerchant: 2})
		cfg := Config{BaseURL: srv.URL, Limiter: l} // no retries, no circuits
		if rt != nil {
			cfg.HTTPClient = &http.Client{Transport: rt}
		}
		return newClient(t, cfg)
	}
	idle := func(t *testing.T) {
		t.Helper()
		if calls, merchants := l.inFlight(); calls != 0 || merchants != 0 {
			t.Errorf("after the call: %d calls in flight, %d merchants known; want none", calls, merchants)
		}
	}

	t.Run("a call holds one slot and gives it back", func(t *testing.T) {
		c := newLimited(t, nil)
		if _, err := c.GetPayment(credCtx(), "pay_1"); err != nil {
			t.Fatal(err)
		}
		if got := inFlightSeen(); len(got) != 1 || got[0] != 1 {
			t.Errorf("calls in flight seen by the REST API: %v, want [1]", got)
		}
		idle(t)
	})
	t.Run("given back after an error", func(t *testing.T) {
		c := newLimited(t, nil)
		if _, err := c.GetPayment(credCtx(), "pay_500"); KindOf(err) != KindUpstream {
			t.Fatalf("err %v, want KindUpstream", err)
		}
		inFlightSeen()
		idle(t)
	})
	t.Run("given back after a panic", func(t *testing.T) {
		c := newLimited(t, panickingTransport{})
		func() {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			_, _ = c.GetPayment(credCtx(), "pay_1")
		}()
		idle(t)
	})
	t.Run("a held slot serves one call", func(t *testing.T) {
		c := newLimited(t, nil)
		h, err := c.Hold(credCtx())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.GetPayment(h, "pay_1"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.GetPayment(context.WithValue(h, derivedKey{}, 1), "pay_2"); err != nil {
			t.Fatal(err)
		}
		if got := inFlightSeen(); len(got) != 2 || got[0] != 1 || got[1] != 2 {
			t.Errorf("calls in flight seen by the REST API: %v, want [1 2] (the held slot, then it and a new one)", got)
		}
		h.Release()
		h.Release() // a second release does nothing
		idle(t)
	})
	t.Run("a cancelled caller waiting for a slot gets a typed error and makes no call", func(t *testing.T) {
		c := newLimited(t, nil)
		ctx := credCtx()
		hold(t, l, ctx)
		hold(t, l, ctx)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		before := srv.calls.Load()
		_, err := c.GetPayment(cctx, "pay_1")
		var e *Error
		if !errors.As(err, &e) || e.Kind != KindCanceled || e.Endpoint != EndpointGetPayment {
			t.Fatalf("err %#v, want KindCanceled on %s", err, EndpointGetPayment)
		}
		if srv.calls.Load() != before {
			t.Error("the REST API was called")
		}
	})
	t.Run("no slot without credentials or with an invalid id", func(t *testing.T) {
		c := newLimited(t, nil)
		for _, call := range []func() error{
			func() error { _, err := c.GetPayment(context.Background(), "pay_1"); return err },
			func() error { _, err := c.GetPayment(credCtx(), ".."); return err },
		} {
			if err := call(); err == nil {
				t.Fatal("no error")
			}
			idle(t)
		}
	})
}

type panickingTransport struct{}

func (panickingTransport) RoundTrip(*http.Request) (*http.Response, error) { panic("bug in transport") }

// TestLimiterForgetsIdleMerchants: the merchant map holds only merchants
// with a call in flight or waiting.
func TestLimiterForgetsIdleMerchants(t *testing.T) {
	t.Parallel()
	l := NewLimiter(LimiterConfig{MaxInFlight: 1000, MaxInFlightPerMerchant: 3})
	var held []*Held
	for i := range 100 {
		for range 3 {
			held = append(held, hold(t, l, merchantCtx(fmt.Sprint(i))))
		}
	}
	if calls, merchants := l.inFlight(); calls != 300 || merchants != 100 {
		t.Fatalf("%d calls, %d merchants; want 300 and 100", calls, merchants)
	}
	for _, h := range held {
		h.Release()
	}
	if calls, merchants := l.inFlight(); calls != 0 || merchants != 0 {
		t.Fatalf("after release: %d calls, %d merchants; want none", calls, merchants)
	}
}

// TestLimiterKeyIsNotTheSecret: merchants are told apart by their whole
// pair (the same key with another secret is another merchant), by a hash.
func TestLimiterKeyIsNotTheSecret(t *testing.T) {
	t.Parallel()
	pair := Credentials{APIKey: "ak_test_k", APISecret: "sk_test_s"}
	k := merchantKeyOf(pair)
	for _, other := range []Credentials{{APIKey: "ak_test_k", APISecret: "sk_test_t"}, {APIKey: "ak_test_ks", APISecret: "k_test_s"}} {
		if merchantKeyOf(other) == k {
			t.Errorf("%#v and %#v share a merchant key", pair, other)
		}
	}
	if string(k[:len(pair.APISecret)]) == pair.APISecret {
		t.Error("the merchant key starts with the secret")
	}
}

// TestLimiterAllocations: a call that finds its slots free allocates
// nothing in the limiter (the REST client's hot path).
func TestLimiterAllocations(t *testing.T) {
	if testenv.RaceEnabled() {
		t.Skip("the race detector changes allocation counts")
	}
	l := NewLimiter(LimiterConfig{})
	ctx := WithRequestLimit(credCtx(), 4)
	cv, _ := credentialsFrom(ctx)
	allocs := testing.AllocsPerRun(1000, func() {
		s, err := l.slotFor(ctx, cv)
		if err != nil {
			t.Fatal(err)
		}
		s.release()
	})
	if allocs != 0 {
		t.Errorf("%.1f allocations per uncontended acquire and release, want 0", allocs)
	}
}

// BenchmarkLimiter: one call's acquire and release, alone and with
// callers of 8 merchants on every core (none waits: the pool is large).
func BenchmarkLimiter(b *testing.B) {
	l := NewLimiter(LimiterConfig{})
	b.Run("uncontended", func(b *testing.B) {
		ctx := WithRequestLimit(credCtx(), 16)
		cv, _ := credentialsFrom(ctx)
		for b.Loop() {
			s, _ := l.slotFor(ctx, cv)
			s.release()
		}
	})
	b.Run("parallel-8-merchants", func(b *testing.B) {
		var n atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			ctx := WithRequestLimit(merchantCtx(fmt.Sprint(n.Add(1)%8)), 16)
			cv, _ := credentialsFrom(ctx)
			for pb.Next() {
				s, _ := l.slotFor(ctx, cv)
				s.release()
			}
		})
	})
}

// derivedKey is a context key of the tests' own: a context derived from
// another must keep what the first carried.
type derivedKey struct{}
