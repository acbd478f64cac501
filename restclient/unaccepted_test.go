package restclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// The unaccepted pairs' bounds (unaccepted.go), against a server that
// knows one pair (testKey, testSecret), answers 401 to every other and
// counts the calls it gets.

const goodID = "pay_prod_0123456789abcdef0123456789abcdef"

// authServer answers the good pair's payment goodID, 404 for another id,
// and 401 to any other pair; gate, when set, holds every call until closed.
func authServer(t *testing.T, gate chan struct{}) *testServer {
	return newTestServer(t, authHandler(gate))
}

// authHandler accepts testKey's pair only, for goodID only; with a gate,
// each request first waits for it.
func authHandler(gate chan struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if gate != nil {
			<-gate
		}
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Header.Get("x-api-key") != testKey || r.Header.Get("x-api-secret") != testSecret:
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":"Invalid API credentials"}`))
		case r.URL.Path != "/api/v1/payments/"+goodID:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":"Payment not found"}`))
		default:
			_, _ = w.Write([]byte(paymentBody))
		}
	}
}

func gatedClient(t *testing.T, url string, cfg UnacceptedConfig) *Client {
	return newClient(t, Config{BaseURL: url, Limiter: NewLimiter(LimiterConfig{Unaccepted: cfg})})
}

func invented(i int) context.Context {
	return WithCredentials(context.Background(), Credentials{APIKey: fmt.Sprintf("ak_test_fake%d", i), APISecret: "sk_test_nope"})
}

func fromAddr(ctx context.Context, addr string) context.Context {
	return WithClientAddr(ctx, netip.MustParseAddr(addr))
}

func kindOf(err error) (ErrorKind, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind, true
	}
	return 0, false
}

func TestRefusedPairMakesOneCall(t *testing.T) {
	t.Parallel()
	srv := authServer(t, nil)
	c := gatedClient(t, srv.URL, UnacceptedConfig{CallsPerSecond: 1000, RefusedTTL: time.Hour})
	ctx := invented(1)

	// A request's fan-out: 100 calls at once, as the loaders make them
	// (each takes its slot with Hold first).
	var wg sync.WaitGroup
	var unauthorized atomic.Int64
	for i := 0; i < 100; i++ {
		held, err := c.Hold(ctx)
		if err != nil {
			if k, _ := kindOf(err); k == KindUnauthorized {
				unauthorized.Add(1)
			}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer held.Release()
			if _, err := c.GetPayment(held, goodID); err != nil {
				if k, _ := kindOf(err); k == KindUnauthorized {
					unauthorized.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if got := srv.calls.Load(); got != 1 {
		t.Errorf("REST calls for a refused pair's 100 lookups = %d, want 1", got)
	}
	if got := unauthorized.Load(); got != 100 {
		t.Errorf("KindUnauthorized answers = %d, want 100", got)
	}
	// A repeat of the pair (another request) is answered from the cache.
	_, err := c.GetPayment(invented(1), goodID)
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindUnauthorized || e.Status != 401 || e.Endpoint != EndpointGetPayment || e.Message != "Invalid API credentials" {
		t.Errorf("cached refusal = %#v, want the REST API's 401 for %s", err, EndpointGetPayment)
	}
	if got := srv.calls.Load(); got != 1 {
		t.Errorf("REST calls after a repeat = %d, want still 1", got)
	}
	// Refused tells the edge which requests the REST API refused.
	if !Refused(ctx) {
		t.Error("Refused = false for the request whose pair got a 401")
	}
	if Refused(invented(2)) {
		t.Error("Refused = true for a pair not yet asked")
	}
}

func TestRefusalExpires(t *testing.T) {
	t.Parallel()
	srv := authServer(t, nil)
	c := gatedClient(t, srv.URL, UnacceptedConfig{CallsPerSecond: 1000, RefusedTTL: time.Minute})
	now := time.Now()
	var mu sync.Mutex
	c.limiter.gate.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	for _, step := range []struct {
		name      string
		advance   time.Duration
		wantCalls int64
	}{
		{"first call", 0, 1},
		{"within the TTL", 59 * time.Second, 1},
		{"after the TTL", 2 * time.Second, 2},
	} {
		t.Run(step.name, func(t *testing.T) {
			mu.Lock()
			now = now.Add(step.advance)
			mu.Unlock()
			if _, err := c.GetPayment(invented(7), goodID); err == nil {
				t.Fatal("an invented pair was served")
			}
			if got := srv.calls.Load(); got != step.wantCalls {
				t.Errorf("REST calls = %d, want %d", got, step.wantCalls)
			}
		})
	}
}

func TestUnacceptedBudgets(t *testing.T) {
	t.Parallel()
	const rate = 5 // burst 10
	for _, tc := range []struct {
		name      string
		cfg       UnacceptedConfig
		addr      func(i int) string
		wantCalls int64 // at most (the rate may add one while the test runs)
	}{
		{"shared budget", UnacceptedConfig{CallsPerSecond: rate}, func(int) string { return "192.0.2.1" }, 2*rate + 1},
		{"per address, one address", UnacceptedConfig{CallsPerSecond: 1000, PerAddressPerSecond: rate}, func(int) string { return "192.0.2.1" }, 2*rate + 1},
		{"per address, a /64 is one address", UnacceptedConfig{CallsPerSecond: 1000, PerAddressPerSecond: rate},
			func(i int) string { return fmt.Sprintf("2001:db8::%x", i+1) }, 2*rate + 1},
		{"shared budget binds many addresses", UnacceptedConfig{CallsPerSecond: rate, PerAddressPerSecond: 1000},
			func(i int) string { return fmt.Sprintf("192.0.2.%d", i+1) }, 2*rate + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := authServer(t, nil)
			c := gatedClient(t, srv.URL, tc.cfg)
			limited := 0
			for i := 0; i < 100; i++ {
				_, err := c.GetPayment(fromAddr(invented(i), tc.addr(i)), goodID)
				var e *Error
				if errors.As(err, &e) && e.Kind == KindRateLimited {
					limited++
					if e.RetryAfter < time.Second || e.Endpoint != EndpointGetPayment {
						t.Fatalf("refusal %#v: want a RetryAfter of at least 1s and the endpoint", e)
					}
				}
			}
			if got := srv.calls.Load(); got > tc.wantCalls {
				t.Errorf("REST calls of 100 invented pairs = %d, want at most %d", got, tc.wantCalls)
			}
			if limited < 100-int(tc.wantCalls) {
				t.Errorf("refused on the budget: %d, want at least %d", limited, 100-tc.wantCalls)
			}
		})
	}
}

func TestMerchantServedDuringFlood(t *testing.T) {
	t.Parallel()
	srv := authServer(t, nil)
	c := gatedClient(t, srv.URL, UnacceptedConfig{CallsPerSecond: 20, PerAddressPerSecond: 5})
	// The flood spends its address's budget.
	for i := 0; i < 50; i++ {
		_, _ = c.GetPayment(fromAddr(invented(i), "198.51.100.7"), goodID)
	}
	merchant := func(addr string) error {
		_, err := c.GetPayment(fromAddr(credCtx(), addr), goodID)
		return err
	}
	if err := merchant("203.0.113.5"); err != nil {
		t.Fatalf("a merchant not yet accepted, from another address, during the flood: %v", err)
	}
	// Accepted now: served from any address, past every budget.
	for i := 0; i < 50; i++ {
		if err := merchant("198.51.100.7"); err != nil {
			t.Fatalf("an accepted merchant's call %d from the flood's address: %v", i, err)
		}
	}
	if accepted, _, probes := c.limiter.gate.counts(); accepted != 1 || probes != 0 {
		t.Errorf("gate holds %d accepted pairs and %d probes, want 1 and 0", accepted, probes)
	}
}

func TestAcceptedPairFansOutAfterItsProbe(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		srv := newMemServer(t, authHandler(release))
		c := newClient(t, Config{BaseURL: srv.URL, HTTPClient: srv.hc, Limiter: NewLimiter(LimiterConfig{Unaccepted: UnacceptedConfig{CallsPerSecond: 1}})})
		ctx := credCtx()
		errs := make(chan error, 20)
		for i := 0; i < 20; i++ {
			go func() { _, err := c.GetPayment(ctx, goodID); errs <- err }()
		}
		// Only the probe reaches the server while it is held, once every
		// call waits.
		synctest.Wait()
		if got := srv.calls.Load(); got != 1 {
			t.Errorf("calls while the probe is in flight = %d, want 1", got)
		}
		close(release)
		for i := 0; i < 20; i++ {
			if err := <-errs; err != nil {
				t.Errorf("call %d: %v", i, err)
			}
		}
		// The 19 others went past the budget of 1 a second (burst 2): the
		// pair was accepted by then.
		if got := srv.calls.Load(); got != 20 {
			t.Errorf("calls = %d, want 20", got)
		}
	})
}

func TestHeldProbeNeutralOutcome(t *testing.T) {
	t.Parallel()
	// A 404 says nothing of the pair: a second call with the same held
	// context must not wait for its own probe.
	srv := authServer(t, nil)
	c := gatedClient(t, srv.URL, UnacceptedConfig{CallsPerSecond: 1000})
	ctx, cancel := context.WithTimeout(credCtx(), 5*time.Second)
	defer cancel()
	held, err := c.Hold(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	if _, err := c.GetPayment(held, "pay_prod_missing"); err == nil {
		t.Fatal("want not found")
	}
	if _, err := c.GetPayment(held, goodID); err != nil {
		t.Fatalf("second call with the held context: %v", err)
	}
}

func TestRevokedPairIsForgotten(t *testing.T) {
	t.Parallel()
	var revoked atomic.Bool
	srv := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if revoked.Load() {
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"error":"key revoked"}`))
			return
		}
		_, _ = w.Write([]byte(paymentBody))
	})
	store := newMemStore()
	c := gatedClient(t, srv.URL, UnacceptedConfig{CallsPerSecond: 1000, Store: store})
	if _, err := c.GetPayment(credCtx(), goodID); err != nil {
		t.Fatal(err)
	}
	if store.len() != 1 {
		t.Fatalf("store holds %d merchants after a 2xx, want 1", store.len())
	}
	revoked.Store(true)
	for i := 0; i < 3; i++ {
		if k, _ := kindOf(func() error { _, err := c.GetPayment(credCtx(), goodID); return err }()); k != KindForbidden {
			t.Fatalf("call %d after revocation: kind %v, want forbidden", i, k)
		}
	}
	if got := srv.calls.Load(); got != 2 {
		t.Errorf("REST calls = %d, want 2 (the 2xx, then one 403; the repeats cached)", got)
	}
	if store.len() != 0 {
		t.Errorf("store holds %d merchants after the 403, want 0", store.len())
	}
}

func TestAcceptedElsewhere(t *testing.T) {
	t.Parallel()
	srv := authServer(t, nil)
	store := newMemStore()
	k := merchantKeyOf(Credentials{APIKey: testKey, APISecret: testSecret})
	store.m[fmt.Sprintf("%x", k[:])] = true
	c := gatedClient(t, srv.URL, UnacceptedConfig{CallsPerSecond: 1, Store: store})
	// Another pair spends the whole shared budget (burst 2).
	for i := 0; i < 5; i++ {
		_, _ = c.GetPayment(invented(i), goodID)
	}
	// A merchant another replica accepted is served at once.
	for i := 0; i < 10; i++ {
		if _, err := c.GetPayment(credCtx(), goodID); err != nil {
			t.Fatalf("call %d of a merchant accepted elsewhere: %v", i, err)
		}
	}
}

func TestAcceptedBounded(t *testing.T) {
	t.Parallel()
	g, _ := newGate(UnacceptedConfig{CallsPerSecond: 1, MaxAccepted: 100})
	for i := 0; i < 1000; i++ {
		g.accepted.ContainsOrAdd(merchantKeyOf(Credentials{APIKey: fmt.Sprint(i), APISecret: "s"}), struct{}{})
	}
	if n, _, _ := g.counts(); n != 100 {
		t.Errorf("accepted entries = %d, want 100", n)
	}
	for i := 0; i < 3*maxRefused; i++ {
		cv := &credentialsValue{merchant: merchantKeyOf(Credentials{APIKey: fmt.Sprint(i), APISecret: "s"})}
		g.report(context.Background(), cv, &Error{Kind: KindUnauthorized, Status: 401})
	}
	if _, n, _ := g.counts(); n > maxRefused {
		t.Errorf("refused entries = %d, want at most %d", n, maxRefused)
	}
}

func TestAddressKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, in, want string }{
		{"IPv4", "192.0.2.1", "192.0.2.1"},
		{"IPv4-mapped", "::ffff:192.0.2.1", "192.0.2.1"},
		{"IPv6 by its /64", "2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := AddressKey(netip.MustParseAddr(tc.in)); got != tc.want {
				t.Errorf("AddressKey(%s) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
	if got := AddressKey(netip.Addr{}); got != unknownAddressKey {
		t.Errorf("AddressKey(invalid) = %q", got)
	}
}

// memStore is an AcceptedStore in memory.
type memStore struct {
	mu sync.Mutex
	m  map[string]bool
}

func newMemStore() *memStore { return &memStore{m: map[string]bool{}} }

func (s *memStore) Accepted(_ context.Context, m string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[m], nil
}

func (s *memStore) Accept(_ context.Context, m string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[m] = true
	return nil
}

func (s *memStore) Forget(_ context.Context, m string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, m)
	return nil
}

func (s *memStore) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// TestAdmitChargesOnlyCallsMade: Admit looks at the budgets of unaccepted
// pairs and charges nothing; the calls made spend them. So operations
// refused after Admit and before any call (a forged cursor, say) leave a
// real merchant's first call its budget.
func TestAdmitChargesOnlyCallsMade(t *testing.T) {
	t.Parallel()
	srv := authServer(t, nil)
	c := gatedClient(t, srv.URL, UnacceptedConfig{CallsPerSecond: 1, PerAddressPerSecond: 1}) // bursts 2
	addr := "192.0.2.1"
	for _, step := range []struct {
		name     string
		do       func() error
		wantKind ErrorKind
		wantErr  bool
		calls    int64
	}{
		{"ten admits of one pair, no call made", func() error {
			for range 10 {
				if err := c.Admit(fromAddr(invented(1), addr)); err != nil {
					return err
				}
			}
			return nil
		}, 0, false, 0},
		{"ten admits of fresh pairs, no call made", func() error {
			for i := range 10 {
				if err := c.Admit(fromAddr(invented(100+i), addr)); err != nil {
					return err
				}
			}
			return nil
		}, 0, false, 0},
		{"a real merchant's first call, from the same address", func() error {
			ctx := fromAddr(credCtx(), addr)
			if err := c.Admit(ctx); err != nil {
				return err
			}
			_, err := c.GetPayment(ctx, goodID)
			return err
		}, 0, false, 1},
		{"an invented pair's call spends the last of the burst", func() error { _, err := c.GetPayment(fromAddr(invented(2), addr), goodID); return err }, KindUnauthorized, true, 2},
		{"Admit now sees the budget spent", func() error { return c.Admit(fromAddr(invented(3), addr)) }, KindRateLimited, true, 2},
		{"and so does the call", func() error { _, err := c.GetPayment(fromAddr(invented(4), addr), goodID); return err }, KindRateLimited, true, 2},
		{"the refused pair, again", func() error { return c.Admit(fromAddr(invented(2), "198.51.100.1")) }, KindUnauthorized, true, 2},
		{"the accepted merchant, past the budgets", func() error { return c.Admit(fromAddr(credCtx(), addr)) }, 0, false, 2},
	} {
		t.Run(step.name, func(t *testing.T) {
			err := step.do()
			k, isErr := kindOf(err)
			if isErr != step.wantErr || (isErr && k != step.wantKind) {
				t.Errorf("err = %v, want kind %v (%v)", err, step.wantKind, step.wantErr)
			}
			if got := srv.calls.Load(); got != step.calls {
				t.Errorf("REST calls = %d, want %d", got, step.calls)
			}
		})
	}
}

// TestMerchantDecision: Client.Merchant, the edge's one decision of who a
// request is for every budget, names a merchant only for a pair the REST
// API accepted (here or, through the store, on another replica).
func TestMerchantDecision(t *testing.T) {
	t.Parallel()
	srv := authServer(t, nil)
	storeKnown := Credentials{APIKey: "ak_test_elsewhere", APISecret: "sk_test_elsewhere"}
	store := newMemStore()
	k := merchantKeyOf(storeKnown)
	store.m[fmt.Sprintf("%x", k[:])] = true
	gated := gatedClient(t, srv.URL, UnacceptedConfig{CallsPerSecond: 20, Store: store})
	open := gatedClient(t, srv.URL, UnacceptedConfig{})
	// The good pair is accepted by one call; an invented one refused by one.
	if _, err := gated.GetPayment(credCtx(), goodID); err != nil {
		t.Fatal(err)
	}
	if _, err := gated.GetPayment(invented(7), goodID); KindOf(err) != KindUnauthorized {
		t.Fatalf("refused pair's call: %v", err)
	}
	for _, tc := range []struct {
		name     string
		c        *Client
		ctx      context.Context
		merchant bool
	}{
		{"no credentials", gated, context.Background(), false},
		{"an invented pair", gated, invented(1), false},
		{"an invented pair, Admit asked", gated, func() context.Context { ctx := invented(2); _ = gated.Admit(ctx); return ctx }(), false},
		{"a pair the REST API accepted", gated, credCtx(), true},
		{"a pair the REST API refused", gated, invented(7), false},
		{"a pair another replica accepted (the store)", gated, WithCredentials(context.Background(), storeKnown), true},
		{"no bounds on unaccepted pairs: any pair", open, invented(3), true},
		{"no bounds, no credentials", open, context.Background(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m, ok := tc.c.Merchant(tc.ctx)
			if ok != tc.merchant {
				t.Fatalf("Merchant = %q, %v; want a merchant: %v", m, ok, tc.merchant)
			}
			if want, _ := MerchantOf(tc.ctx); ok && m != want {
				t.Errorf("Merchant = %q, want MerchantOf's %q", m, want)
			}
		})
	}
	if got := srv.calls.Load(); got != 2 {
		t.Errorf("REST calls = %d, want the 2 calls made (deciding makes none)", got)
	}
}
