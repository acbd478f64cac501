package restclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// merchantState is the state of the circuit of ctx's merchant, or "none"
// when it has no entry.
func (c *Client) merchantState(ctx context.Context) string {
	cv, _ := credentialsFrom(ctx)
	m := c.breaker.merchants.get(cv.merchant.short(), time.Now().UnixNano())
	if m == nil {
		return "none"
	}
	return CircuitState(m.cb.State()).String()
}

// merchantCtx is the context of merchant name's (made-up) credentials.
func merchantCtx(name string) context.Context {
	return WithCredentials(context.Background(), Credentials{APIKey: "ak_test_" + name, APISecret: "sk_test_secret_of_" + name})
}

// closedAddr is a local address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func paymentWithID(w http.ResponseWriter, id string) {
	b, _ := json.Marshal(id)
	fmt.Fprintf(w, `{"id":%s,"status":"PENDING","amount":1,"created_at":"2026-11-21T09:30:00Z","updated_at":"2026-11-21T09:30:00Z"}`, b)
}

// merchantServer is a REST API that counts calls per API key, answers a
// payment (or an empty page) for every id and cursor, except that it
// fails on poisoned ones (ids starting with "pay_poison", the cursor
// "poison") as fail says, and on every call during an outage (setOutage):
// "500", "503" or "hang" (until the caller goes away).
type merchantServer struct {
	*testServer
	byKey  map[string]*atomic.Int64 // calls by API key, keys fixed before the test starts
	outage atomic.Pointer[string]
}

func (s *merchantServer) setOutage(fail string) { s.outage.Store(&fail) }

func newMerchantServer(t *testing.T, fail string, merchants ...string) *merchantServer {
	return merchantServerOn(t, newTestServer, fail, merchants...)
}

// merchantServerOn is newMerchantServer on a server made by serve
// (newTestServer or newMemServer).
func merchantServerOn(t *testing.T, serve func(*testing.T, http.HandlerFunc) *testServer, fail string, merchants ...string) *merchantServer {
	s := &merchantServer{byKey: make(map[string]*atomic.Int64)}
	for _, m := range merchants {
		s.byKey["ak_test_"+m] = new(atomic.Int64)
	}
	s.testServer = serve(t, func(w http.ResponseWriter, r *http.Request) {
		if n := s.byKey[r.Header.Get("x-api-key")]; n != nil {
			n.Add(1)
		}
		id := path.Base(r.URL.Path)
		mode := ""
		if strings.HasPrefix(id, "pay_poison") || r.URL.Query().Get("cursor") == "poison" {
			mode = fail
		}
		if o := s.outage.Load(); o != nil {
			mode = *o
		}
		switch mode {
		case "hang":
			<-r.Context().Done()
			return
		case "500", "503":
			w.WriteHeader(map[string]int{"500": 500, "503": 503}[mode])
			_, _ = w.Write([]byte(`{"error":"Service trouble"}`))
			return
		}
		if id == "payments" {
			_, _ = w.Write([]byte(`{"data":[],"has_more":false,"next_cursor":null}`))
			return
		}
		paymentWithID(w, id)
	})
	return s
}

func (s *merchantServer) callsOf(merchant string) int64 { return s.byKey["ak_test_"+merchant].Load() }

// TestBreakerIsolation: merchant A's calls on input the REST API fails on
// (ids answered 500 or hanging past the per-call timeout, a cursor
// answered 500) open A's circuit and nobody else's: merchant B's calls,
// before, after and while A's circuit is open, all succeed and all reach
// the REST API, and the process-wide circuit stays closed (its hook never
// called). Before, the shared circuit opened after A's fifth failure in a
// row and B got "circuit open".
// A is a real merchant (the REST API accepted its credentials first),
// the worst case: its failures are the kind that may count towards the
// process-wide circuit. Invented credential pairs failing the same way
// are not counted at all.
func TestBreakerIsolation(t *testing.T) {
	t.Parallel()
	poisonID := func(c *Client, ctx context.Context, i int) error {
		_, err := c.GetPayment(ctx, fmt.Sprintf("pay_poison_%d", i))
		return err
	}
	poisonCursor := func(c *Client, ctx context.Context, _ int) error {
		_, err := c.ListPayments(ctx, ListParams{Cursor: "poison"})
		return err
	}
	for _, tc := range []struct {
		name      string
		fail      string // how the REST API fails on poison
		poison    func(*Client, context.Context, int) error
		wantKind  ErrorKind
		attackers int // distinct invented credential pairs A uses; 0: A's own
	}{
		{"ids answered 500", "500", poisonID, KindUpstream, 0},
		{"ids hanging past the timeout", "hang", poisonID, KindTimeout, 0},
		{"cursor answered 500", "500", poisonCursor, KindUpstream, 0},
		{"invented credentials, ids answered 500", "500", poisonID, KindUpstream, 4},
		{"invented credentials, ids hanging", "hang", poisonID, KindTimeout, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newMerchantServer(t, tc.fail, "A", "B")
			var process transitions
			c := newClient(t, Config{BaseURL: srv.URL, Timeout: 150 * time.Millisecond, Resilience: Resilience{
				MaxRetries: 2, RetryBaseDelay: time.Millisecond, BreakerFailures: 5, OnBreakerChange: process.record}}) // the gateway's defaults
			a, b := merchantCtx("A"), merchantCtx("B")
			if _, err := c.GetPayment(a, "pay_good"); err != nil { // A is a real merchant
				t.Fatal(err)
			}
			attacker := func(i int) context.Context {
				if tc.attackers == 0 {
					return a
				}
				return merchantCtx(fmt.Sprintf("invented%d", i%tc.attackers))
			}
			bCalls := 0
			callB := func(step string) {
				t.Helper()
				bCalls++
				if p, err := c.GetPayment(b, "pay_b"); err != nil || p.ID != "pay_b" {
					t.Fatalf("%s: merchant B got %v", step, err)
				}
				if got := srv.callsOf("B"); got != int64(bCalls) {
					t.Fatalf("%s: B made %d calls, the REST API saw %d", step, bCalls, got)
				}
			}
			callB("before the poison")
			// Five poisoned calls in a row from each attacker (as six
			// aliases of one query would make them), nothing in between:
			// the default threshold of consecutive failures, reached.
			rounds := 5 * max(1, tc.attackers)
			for i := range rounds {
				if err := tc.poison(c, attacker(i), i); KindOf(err) != tc.wantKind {
					t.Fatalf("poison %d: %v, want kind %v", i, err, tc.wantKind)
				}
			}
			callB("after the poison")
			// The attacker is now shed on its own, without REST calls.
			before := srv.calls.Load()
			for i := range max(1, tc.attackers) {
				err := tc.poison(c, attacker(i), i)
				if e, ok := err.(*Error); !ok || e.Message != msgMerchantCircuitOpen {
					t.Fatalf("attacker %d after its circuit opened: %v", i, err)
				}
				callB("after the attacker's circuit opened")
			}
			if n := srv.calls.Load() - before; n != int64(max(1, tc.attackers)) { // B's calls only
				t.Errorf("%d REST calls, want only B's %d", n, max(1, tc.attackers))
			}
			if tc.attackers == 0 {
				if _, err := c.GetPayment(a, "pay_good"); err == nil || err.(*Error).Message != msgMerchantCircuitOpen {
					t.Errorf("A's good id while A's circuit is open: %v", err)
				}
			}
			if s := c.merchantState(b); s != "closed" {
				t.Errorf("B's circuit %s", s)
			}
			if s, got := c.BreakerState().String(), process.list(); s != "closed" || len(got) != 0 {
				t.Errorf("process-wide circuit %s, transitions %v", s, got)
			}
		})
	}
}

// TestProcessBreakerOpensOnOutage: when the REST API is down for everyone
// the process-wide circuit still opens after BreakerFailures failures, and
// then a merchant that never called before is refused at once, without a
// REST call: when nothing listens (systemic: one merchant is enough, even
// with credentials the REST API never accepted), and when the REST API
// answers 503 or hangs for every merchant (three merchants it accepted
// before).
func TestProcessBreakerOpensOnOutage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		outage    string // "closed": nothing listens; "503"; "hang"
		merchants []string
		wantKind  ErrorKind
	}{
		{"nothing listens, one merchant", "closed", []string{"A"}, KindUpstream},
		{"nothing listens, three merchants", "closed", []string{"A", "B", "C"}, KindUpstream},
		{"503 for everyone", "503", []string{"A", "B", "C"}, KindUpstream},
		{"hang for everyone", "hang", []string{"A", "B", "C"}, KindTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newMerchantServer(t, "", append(tc.merchants, "D")...)
			var dials atomic.Int64
			tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				dials.Add(1)
				return (&net.Dialer{}).DialContext(ctx, network, addr)
			}}
			t.Cleanup(tr.CloseIdleConnections)
			var process transitions
			c := newClient(t, Config{BaseURL: srv.URL, HTTPClient: &http.Client{Transport: tr}, Timeout: 150 * time.Millisecond,
				Resilience: Resilience{BreakerFailures: 3, BreakerCooldown: time.Hour, OnBreakerChange: process.record}})
			if tc.outage == "closed" {
				c.host = closedAddr(t)
			} else {
				for _, m := range tc.merchants { // the REST API accepts them
					if _, err := c.GetPayment(merchantCtx(m), "pay_ok"); err != nil {
						t.Fatal(err)
					}
				}
			}
			srv.setOutage(tc.outage)
			for i := range 3 {
				m := tc.merchants[i%len(tc.merchants)]
				if _, err := c.GetPayment(merchantCtx(m), "pay_ok"); KindOf(err) != tc.wantKind {
					t.Fatalf("call %d of %s: %v", i, m, err)
				}
			}
			if s := c.BreakerState().String(); s != "open" {
				t.Fatalf("process-wide circuit %s after 3 failures", s)
			}
			beforeCalls, beforeDials := srv.calls.Load(), dials.Load()
			_, err := c.GetPayment(merchantCtx("D"), "pay_ok")
			if e, ok := err.(*Error); !ok || e.Kind != KindUpstream || e.Message != msgCircuitOpen {
				t.Fatalf("a new merchant while the circuit is open: %v", err)
			}
			if srv.calls.Load() != beforeCalls || dials.Load() != beforeDials {
				t.Errorf("a refused call reached the REST API")
			}
			if got := strings.Join(process.list(), " "); got != "closed>open" {
				t.Errorf("transitions %q", got)
			}
		})
	}
}

// TestProcessBreakerNeedsThreeMerchants: failures of two merchants the
// REST API accepted (say one business with two key pairs, or an attacker
// with two accounts) do not open the process-wide circuit; a third
// merchant's does.
func TestProcessBreakerNeedsThreeMerchants(t *testing.T) {
	t.Parallel()
	srv := newMerchantServer(t, "500", "A", "B", "C", "D")
	c := newClient(t, Config{BaseURL: srv.URL, Resilience: Resilience{BreakerFailures: 3, BreakerCooldown: time.Hour}})
	for _, m := range []string{"A", "B", "C", "D"} {
		if _, err := c.GetPayment(merchantCtx(m), "pay_ok"); err != nil {
			t.Fatal(err)
		}
	}
	// A and B alternate poison: 4 consecutive failures, two merchants.
	for i := range 4 {
		if _, err := c.GetPayment(merchantCtx([]string{"A", "B"}[i%2]), "pay_poison"); KindOf(err) != KindUpstream {
			t.Fatal(err)
		}
	}
	if s := c.BreakerState().String(); s != "closed" {
		t.Fatalf("process-wide circuit %s after two merchants' failures", s)
	}
	if _, err := c.GetPayment(merchantCtx("D"), "pay_ok"); err != nil {
		t.Fatalf("D: %v", err)
	}
	// D's success ended the run; A, B, C in a row open it.
	for _, m := range []string{"A", "B", "C"} {
		_, _ = c.GetPayment(merchantCtx(m), "pay_poison")
	}
	if s := c.BreakerState().String(); s != "open" {
		t.Fatalf("process-wide circuit %s after three merchants' failures", s)
	}
}

// TestProcessBreakerHalfOpen: after the cooldown the process-wide circuit
// lets one probe through, without retries; a failed probe reopens it, a
// good one closes it.
func TestProcessBreakerHalfOpen(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		srv := merchantServerOn(t, newMemServer, "", "A", "B", "C")
		var process transitions
		c := newClient(t, Config{BaseURL: srv.URL, HTTPClient: srv.hc, Resilience: Resilience{
			MaxRetries: 2, RetryBaseDelay: time.Millisecond, BreakerFailures: 3, BreakerCooldown: 50 * time.Millisecond, OnBreakerChange: process.record}})
		for _, m := range []string{"A", "B", "C"} {
			if _, err := c.GetPayment(merchantCtx(m), "pay_ok"); err != nil {
				t.Fatal(err)
			}
		}
		srv.setOutage("503")
		for _, m := range []string{"A", "B", "C"} { // each retried twice
			if _, err := c.GetPayment(merchantCtx(m), "pay_ok"); KindOf(err) != KindUpstream {
				t.Fatal(err)
			}
		}
		if n, s := srv.calls.Load(), c.BreakerState().String(); n != 3+9 || s != "open" {
			t.Fatalf("%d calls, state %s", n, s)
		}
		time.Sleep(80 * time.Millisecond)
		if s := c.BreakerState().String(); s != "half-open" {
			t.Fatalf("state %s after the cooldown", s)
		}
		if _, err := c.GetPayment(merchantCtx("A"), "pay_ok"); KindOf(err) != KindUpstream || err.(*Error).Status != 503 {
			t.Fatalf("probe: %v", err)
		}
		if n, s := srv.calls.Load(), c.BreakerState().String(); n != 13 || s != "open" {
			t.Fatalf("after a failed probe: %d calls, state %s", n, s)
		}
		time.Sleep(80 * time.Millisecond)
		srv.setOutage("")
		if _, err := c.GetPayment(merchantCtx("B"), "pay_ok"); err != nil {
			t.Fatalf("good probe: %v", err)
		}
		if s := c.BreakerState().String(); s != "closed" {
			t.Fatalf("state %s after a good probe", s)
		}
		want := "closed>open open>half-open half-open>open open>half-open half-open>closed"
		if got := strings.Join(process.list(), " "); got != want {
			t.Errorf("transitions %q, want %q", got, want)
		}
	})
}

// TestMerchantTableBounded: invented credential pairs, each failing, fill
// the table to its bound and no further, and a real merchant's circuit
// (accepted by the REST API, used recently) survives them.
func TestMerchantTableBounded(t *testing.T) {
	t.Parallel()
	srv := newMerchantServer(t, "500", "real")
	c := newClient(t, Config{BaseURL: srv.URL, Resilience: Resilience{BreakerFailures: 5}})
	c.breaker.merchants.max = 64
	real := merchantCtx("real")
	if _, err := c.GetPayment(real, "pay_poison"); KindOf(err) != KindUpstream { // one failure on record
		t.Fatal(err)
	}
	if _, err := c.GetPayment(real, "pay_ok"); err != nil { // and accepted
		t.Fatal(err)
	}
	for i := range 1000 {
		_, _ = c.GetPayment(merchantCtx(fmt.Sprintf("invented%d", i)), "pay_poison")
		if i%100 == 0 {
			_, _ = c.GetPayment(real, "pay_ok")
		}
	}
	if n := c.breaker.merchants.len(); n > 64 {
		t.Errorf("%d entries, over the bound of 64", n)
	}
	if s := c.merchantState(real); s != "closed" {
		t.Errorf("the real merchant's circuit: %s", s)
	}
}

// TestMerchantKey: distinct pairs have distinct keys (the lengths are
// hashed: moving a byte from the key to the secret changes the key), and
// the tag is 16 hex digits that contain neither credential.
func TestMerchantKey(t *testing.T) {
	t.Parallel()
	a := merchantKeyOf(Credentials{APIKey: "ak_test_ab", APISecret: "c"})
	b := merchantKeyOf(Credentials{APIKey: "ak_test_a", APISecret: "bc"})
	if a == b || a != merchantKeyOf(Credentials{APIKey: "ak_test_ab", APISecret: "c"}) {
		t.Errorf("keys %x %x", a, b)
	}
	if tag := merchantTag(1); tag != "0000000000000001" {
		t.Errorf("tag %q", tag)
	}
}
