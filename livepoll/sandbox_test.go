package livepoll_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"paygraph/livepoll"
	"paygraph/sandbox"

	"paygraph/internal/testenv"
)

// These tests run the hub against the sandbox over real HTTP, with a fetch
// made of plain net/http GETs (the REST client is not this package's
// concern), and count the REST calls with the sandbox's call log.

type env struct {
	sb     *sandbox.Server
	ts     *httptest.Server // nil for newMemEnv's
	base   string           // the sandbox's URL
	a, b   sandbox.Business
	client *http.Client
}

func newEnv(t *testing.T) *env {
	t.Helper()
	sb := sandbox.New(sandbox.Options{})
	ts := httptest.NewServer(sb)
	t.Cleanup(ts.Close)
	biz := sb.Businesses()
	return &env{sb: sb, ts: ts, base: ts.URL, a: biz[0], b: biz[1], client: ts.Client()}
}

// newMemEnv is newEnv without a listener: the sandbox's handler answers
// in the caller's goroutine. A test on a synctest bubble's fake clock
// uses it, as no goroutine of a bubble may wait on a real socket.
func newMemEnv(t *testing.T) *env {
	t.Helper()
	sb := sandbox.New(sandbox.Options{})
	biz := sb.Businesses()
	return &env{sb: sb, base: "http://sandbox.test", a: biz[0], b: biz[1], client: &http.Client{Transport: testenv.HandlerTransport{H: sb}}}
}

func newHub(t *testing.T, cfg livepoll.Config) *livepoll.Hub {
	t.Helper()
	h, err := livepoll.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

// merchantKey is what the gateway will derive: a hash of the pair, never
// the pair.
func merchantKey(b sandbox.Business) string {
	sum := sha256.Sum256([]byte(b.APIKey + "\x00" + b.APISecret))
	return hex.EncodeToString(sum[:])
}

type payment struct {
	ID        string `json:"id"`
	Status    string `json:"status"`
	UpdatedAt string `json:"updated_at"`
}

// restError is a failed GET; a 429 is a rateLimited.
type restError struct {
	status int
	msg    string
}

func (e *restError) Error() string { return "REST " + strconv.Itoa(e.status) + ": " + e.msg }

type rateLimited struct {
	restError
	after time.Duration
}

func (e *rateLimited) RetryAfter() time.Duration { return e.after }

// phase maps a payment status: the terminal ones end the subscription,
// SUCCEEDED is watched for a REFUNDED.
func phase(status string) livepoll.Phase {
	switch status {
	case sandbox.StatusSucceeded:
		return livepoll.PhaseSettled
	case sandbox.StatusFailed, sandbox.StatusCancelled, sandbox.StatusRefunded:
		return livepoll.PhaseFinal
	}
	return livepoll.PhaseOpen
}

// paymentFetch GETs one payment with biz's credentials.
func (e *env) paymentFetch(biz sandbox.Business, id string) livepoll.FetchFunc {
	return func(ctx context.Context) (livepoll.Snapshot, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.base+"/api/v1/payments/"+url.PathEscape(id), nil)
		if err != nil {
			return livepoll.Snapshot{}, err
		}
		req.Header.Set("x-api-key", biz.APIKey)
		req.Header.Set("x-api-secret", biz.APISecret)
		res, err := e.client.Do(req)
		if err != nil {
			return livepoll.Snapshot{}, err
		}
		defer res.Body.Close()
		body, err := io.ReadAll(io.LimitReader(res.Body, 1<<16))
		if err != nil {
			return livepoll.Snapshot{}, err
		}
		var msg struct {
			Error string `json:"error"`
		}
		switch res.StatusCode {
		case http.StatusOK:
			var p payment
			if err := json.Unmarshal(body, &p); err != nil {
				return livepoll.Snapshot{}, err
			}
			return livepoll.Snapshot{Value: p, Fingerprint: string(body), Phase: phase(p.Status)}, nil
		case http.StatusTooManyRequests:
			json.Unmarshal(body, &msg)
			secs, _ := strconv.Atoi(res.Header.Get("Retry-After"))
			return livepoll.Snapshot{}, &rateLimited{restError{res.StatusCode, msg.Error}, time.Duration(secs) * time.Second}
		case http.StatusNotFound, http.StatusUnauthorized:
			json.Unmarshal(body, &msg)
			return livepoll.Snapshot{}, livepoll.Permanent(&restError{res.StatusCode, msg.Error})
		}
		json.Unmarshal(body, &msg)
		return livepoll.Snapshot{}, &restError{res.StatusCode, msg.Error}
	}
}

func (e *env) subscribe(t *testing.T, h *livepoll.Hub, ctx context.Context, biz sandbox.Business, id string) *livepoll.Subscription {
	t.Helper()
	s, err := h.Subscribe(ctx, livepoll.Key{Merchant: merchantKey(biz), Kind: "payment", ID: id}, e.paymentFetch(biz, id))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// setStatus changes a payment through the sandbox's admin endpoint.
func (e *env) setStatus(t *testing.T, biz sandbox.Business, id, status string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.base+"/sandbox/payments/"+id+"/status", strings.NewReader(`{"status":"`+status+`"}`))
	req.Header.Set("x-api-key", biz.APIKey)
	req.Header.Set("x-api-secret", biz.APISecret)
	res, err := e.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(res.Body)
		t.Fatalf("admin: %d %s", res.StatusCode, body)
	}
}

func (e *env) withStatus(t *testing.T, biz sandbox.Business, status string) string {
	t.Helper()
	return e.pending(t, biz, status, 1)[0]
}

// pending returns the ids of n payments of biz with status (PENDING ones
// are polled until their subscribers leave).
func (e *env) pending(t *testing.T, biz sandbox.Business, status string, n int) []string {
	t.Helper()
	var ids []string
	for _, p := range e.sb.Payments(biz.APIKey) {
		if p.Status == status && len(ids) < n {
			ids = append(ids, p.ID)
		}
	}
	if len(ids) < n {
		t.Fatalf("fewer than %d %s payments", n, status)
	}
	return ids
}

// callsFor counts the GETs of one payment made with one API key.
func (e *env) callsFor(biz sandbox.Business, id string) int {
	n := 0
	for _, c := range e.sb.Calls() {
		if c.Route == sandbox.RoutePayment && c.APIKey == biz.APIKey && strings.HasSuffix(c.EscapedPath, "/"+id) {
			n++
		}
	}
	return n
}

// next receives one event, failing after a generous wait (no timing is
// asserted: the wait only stops a broken test from hanging).
func next(t *testing.T, s *livepoll.Subscription) (livepoll.Event, bool) {
	t.Helper()
	select {
	case ev, ok := <-s.Events():
		return ev, ok
	case <-time.After(10 * time.Second):
		t.Fatal("no event")
		return livepoll.Event{}, false
	}
}

func nextPayment(t *testing.T, s *livepoll.Subscription) payment {
	t.Helper()
	ev, ok := next(t, s)
	if !ok {
		t.Fatalf("ended: %v", s.Err())
	}
	if ev.Err != nil {
		t.Fatalf("error event: %v", ev.Err)
	}
	return ev.Snapshot.Value.(payment)
}

// eventually waits (generously) for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestPaymentLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	h := newHub(t, livepoll.Config{Interval: 20 * time.Millisecond})
	id := e.withStatus(t, e.a, sandbox.StatusPending)
	sub := e.subscribe(t, h, context.Background(), e.a, id)

	first := nextPayment(t, sub)
	t.Run("initial state at once", func(t *testing.T) {
		if first.ID != id || first.Status != sandbox.StatusPending {
			t.Errorf("first event %+v", first)
		}
	})
	t.Run("a change made through the admin endpoint arrives", func(t *testing.T) {
		e.setStatus(t, e.a, id, sandbox.StatusSucceeded)
		p := nextPayment(t, sub)
		if p.Status != sandbox.StatusSucceeded || p.UpdatedAt <= first.UpdatedAt {
			t.Errorf("event %+v after %+v", p, first)
		}
	})
	t.Run("SUCCEEDED is still watched; REFUNDED completes", func(t *testing.T) {
		e.setStatus(t, e.a, id, sandbox.StatusRefunded)
		if p := nextPayment(t, sub); p.Status != sandbox.StatusRefunded {
			t.Errorf("event %+v", p)
		}
		if ev, ok := next(t, sub); ok {
			t.Errorf("an event after the terminal state: %+v", ev)
		}
		if sub.Err() != nil {
			t.Errorf("Err() = %v, want nil (completed)", sub.Err())
		}
		eventually(t, "the poller to stop", func() bool { return h.Stats() == livepoll.Stats{} })
	})
}

func TestTerminalStates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		status string
	}{
		{"FAILED", sandbox.StatusFailed},
		{"CANCELLED", sandbox.StatusCancelled},
		{"REFUNDED", sandbox.StatusRefunded},
		{"SUCCEEDED after the watch", sandbox.StatusSucceeded},
	}
	e := newEnv(t)
	h := newHub(t, livepoll.Config{Interval: 5 * time.Millisecond, WatchAfterSettled: 50 * time.Millisecond})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := e.withStatus(t, e.a, tt.status)
			sub := e.subscribe(t, h, context.Background(), e.a, id)
			if p := nextPayment(t, sub); p.Status != tt.status {
				t.Errorf("event %+v", p)
			}
			if ev, ok := next(t, sub); ok {
				t.Errorf("an event after the terminal state: %+v", ev)
			}
			if sub.Err() != nil {
				t.Errorf("Err() = %v", sub.Err())
			}
		})
	}
}

func TestHundredSubscribersOnePoller(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e := newMemEnv(t)
		const interval = 50 * time.Millisecond
		h := newHub(t, livepoll.Config{Interval: interval, MaxInterval: interval}) // no backoff: one call per interval exactly
		id := e.withStatus(t, e.a, sandbox.StatusPending)
		subs := make([]*livepoll.Subscription, 100)
		for i := range subs {
			subs[i] = e.subscribe(t, h, context.Background(), e.a, id)
		}
		for i, s := range subs {
			if p := nextPayment(t, s); p.Status != sandbox.StatusPending {
				t.Fatalf("subscriber %d: %+v", i, p)
			}
		}
		if st := h.Stats(); st != (livepoll.Stats{Subscriptions: 100, Pollers: 1}) {
			t.Errorf("stats %+v", st)
		}

		// One REST call per interval, not one per subscriber: ten intervals
		// of the bubble's clock.
		e.sb.ResetCalls()
		const elapsed = 10 * interval
		time.Sleep(elapsed)
		calls := e.sb.CallCount(sandbox.RoutePayment)
		// waits are at least 0.9 × interval: at most elapsed/(0.9 × interval) calls started, plus one in flight
		bound := int(elapsed/(interval*9/10)) + 2
		t.Logf("%d REST calls in %v for 100 subscribers", calls, elapsed)
		if calls < 5 || calls > bound {
			t.Errorf("%d calls in %v for 100 subscribers, want 5 to %d", calls, elapsed, bound)
		}
		{ // a change reaches every subscriber
			e.setStatus(t, e.a, id, sandbox.StatusSucceeded)
			for i, s := range subs {
				if p := nextPayment(t, s); p.Status != sandbox.StatusSucceeded {
					t.Errorf("subscriber %d: %+v", i, p)
				}
			}
		}
	})
}

func TestMerchantsNeverShare(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	h := newHub(t, livepoll.Config{Interval: 10 * time.Millisecond})
	idA := e.withStatus(t, e.a, sandbox.StatusPending)
	idB := e.withStatus(t, e.b, sandbox.StatusPending)

	aOwn := e.subscribe(t, h, context.Background(), e.a, idA)
	bOwn := e.subscribe(t, h, context.Background(), e.b, idB)
	bOnA := e.subscribe(t, h, context.Background(), e.b, idA) // the same-looking id, B's credentials

	t.Run("the same id under another merchant is its own poller", func(t *testing.T) {
		ev, _ := next(t, bOnA)
		var re *restError
		if !errors.As(ev.Err, &re) || re.status != http.StatusNotFound || ev.Snapshot.Value != nil {
			t.Fatalf("B on A's id got %+v, want B's own 404", ev)
		}
		if _, ok := next(t, bOnA); ok || !errors.As(bOnA.Err(), &re) {
			t.Errorf("B's subscription to an id it cannot see did not end: %v", bOnA.Err())
		}
		if n := e.callsFor(e.b, idA); n != 1 {
			t.Errorf("B's GETs of A's id: %d, want 1 (its own, then it stopped)", n)
		}
	})
	a0, b0 := nextPayment(t, aOwn), nextPayment(t, bOwn)
	if a0.ID != idA || b0.ID != idB {
		t.Fatalf("first events %+v %+v", a0, b0)
	}
	t.Run("a change of A's payment reaches A only", func(t *testing.T) {
		e.setStatus(t, e.a, idA, sandbox.StatusSucceeded)
		if p := nextPayment(t, aOwn); p.Status != sandbox.StatusSucceeded {
			t.Errorf("A got %+v", p)
		}
		before := e.callsFor(e.b, idB)
		eventually(t, "B's poller to poll 3 more times", func() bool { return e.callsFor(e.b, idB) >= before+3 })
		select {
		case ev := <-bOwn.Events():
			t.Errorf("B got an event: %+v", ev)
		default:
		}
	})
	t.Run("every call carried its own merchant's key", func(t *testing.T) {
		for _, c := range e.sb.Calls() {
			if strings.HasSuffix(c.EscapedPath, "/"+idB) && c.APIKey != e.b.APIKey {
				t.Errorf("B's payment fetched with another key")
			}
		}
		if e.callsFor(e.a, idB) != 0 {
			t.Error("A's poller fetched B's payment")
		}
	})
}

func TestBoundsRefuseBeforeREST(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	h := newHub(t, livepoll.Config{Interval: time.Hour, MaxPerMerchant: 3, MaxSubscriptions: 5})
	pays, paysB := e.pending(t, e.a, sandbox.StatusPending, 4), e.pending(t, e.b, sandbox.StatusPending, 3)
	for _, id := range pays[:3] {
		e.subscribe(t, h, context.Background(), e.a, id)
	}
	e.subscribe(t, h, context.Background(), e.b, paysB[0])
	refused := func(t *testing.T, biz sandbox.Business, id, scope string) {
		t.Helper()
		_, err := h.Subscribe(context.Background(), livepoll.Key{Merchant: merchantKey(biz), Kind: "payment", ID: id}, e.paymentFetch(biz, id))
		var le *livepoll.LimitError
		if !errors.As(err, &le) || le.Scope != scope {
			t.Fatalf("err = %v, want a %s LimitError", err, scope)
		}
	}
	t.Run("per merchant", func(t *testing.T) { refused(t, e.a, pays[3], livepoll.ScopeMerchant) })
	e.subscribe(t, h, context.Background(), e.b, paysB[1]) // B has room of its own: 5 in the process
	t.Run("per process", func(t *testing.T) { refused(t, e.b, paysB[2], livepoll.ScopeProcess) })
	t.Run("no REST call for a refused subscription", func(t *testing.T) {
		eventually(t, "five first GETs", func() bool { return e.sb.CallCount(sandbox.RoutePayment) >= 5 })
		if n := e.callsFor(e.a, pays[3]) + e.callsFor(e.b, paysB[2]); n != 0 {
			t.Errorf("%d REST calls for refused subscriptions", n)
		}
		if n := e.sb.CallCount(""); n != 5 {
			t.Errorf("%d REST calls, want 5 (one per admitted subscription)", n)
		}
	})
}

func TestRateLimitPausesPoller(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e := newMemEnv(t)
		e.sb.SetFaults(func(sandbox.Call) sandbox.Fault { return sandbox.Fault429 }) // Retry-After: 7
		var limited atomic.Int64
		h := newHub(t, livepoll.Config{Interval: 5 * time.Millisecond, OnPoll: func(kind string, o livepoll.Outcome) {
			if kind == "payment" && o == livepoll.OutcomeRateLimited {
				limited.Add(1)
			}
		}})
		sub := e.subscribe(t, h, context.Background(), e.a, e.withStatus(t, e.a, sandbox.StatusPending))
		ev, _ := next(t, sub)
		var ra livepoll.RetryAfterer
		if !errors.As(ev.Err, &ra) || ra.RetryAfter() != 7*time.Second {
			t.Fatalf("first event %+v, want a 429 with Retry-After 7s", ev)
		}
		// Without the pause, 300 ms at a 5-20 ms wait is 15 or more polls;
		// on the bubble's clock the 300 ms pass at once, and exactly.
		time.Sleep(300 * time.Millisecond)
		if n := e.sb.CallCount(""); n != 1 {
			t.Errorf("%d REST calls during a 7 s Retry-After, want 1", n)
		}
		if n := limited.Load(); n != 1 {
			t.Errorf("OnPoll rate_limited %d times", n)
		}
	})
}

func TestDisconnectsLeaveNothing(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	tests := []struct {
		name    string
		latency time.Duration // of the sandbox: long, a REST call is in flight when they leave
	}{
		{"between polls", 0},
		{"while a REST call is in flight", time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.sb.SetLatency(tt.latency)
			h, err := livepoll.New(livepoll.Config{Interval: 10 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			pays := e.pending(t, e.a, sandbox.StatusPending, 5)
			var cancels []context.CancelFunc
			var subs []*livepoll.Subscription
			for i := range 50 {
				ctx, cancel := context.WithCancel(context.Background())
				cancels = append(cancels, cancel)
				subs = append(subs, e.subscribe(t, h, ctx, e.a, pays[i%len(pays)]))
			}
			if tt.latency == 0 {
				for _, s := range subs {
					nextPayment(t, s)
				}
			} else {
				eventually(t, "a GET of every payment in flight", func() bool { return e.sb.CallCount("") >= len(pays) })
			}
			if st := h.Stats(); st != (livepoll.Stats{Subscriptions: 50, Pollers: 5}) {
				t.Errorf("stats %+v", st)
			}
			for _, c := range cancels {
				c()
			}
			eventually(t, "every subscription to end", func() bool { return h.Stats() == livepoll.Stats{} })
			for i, s := range subs {
				for range s.Events() {
				}
				if s.Err() != context.Canceled {
					t.Errorf("subscriber %d: Err() = %v", i, s.Err())
				}
			}
			// The hub is not closed: the cancels alone must have freed it all.
			e.client.CloseIdleConnections()
			e.ts.Close()
			if err := goleak.Find(ignore); err != nil {
				t.Error(err)
			}
		})
	}
}

// ExampleHub shows the shape of a caller: one key per (merchant, kind,
// id), a fetch that captures the credentials, and a loop over events.
func ExampleHub() {
	sb := sandbox.New(sandbox.Options{})
	ts := httptest.NewServer(sb)
	defer ts.Close()
	biz := sb.Businesses()[0]
	var id string
	for _, p := range sb.Payments(biz.APIKey) {
		if p.Status == sandbox.StatusFailed {
			id = p.ID
			break
		}
	}
	e := &env{sb: sb, ts: ts, base: ts.URL, a: biz, client: ts.Client()}

	h, _ := livepoll.New(livepoll.Config{})
	defer h.Close()
	sub, err := h.Subscribe(context.Background(), livepoll.Key{Merchant: merchantKey(biz), Kind: "payment", ID: id}, e.paymentFetch(biz, id))
	if err != nil {
		fmt.Println(err)
		return
	}
	for ev := range sub.Events() {
		if ev.Err != nil {
			fmt.Println("error:", ev.Err)
			continue
		}
		fmt.Println(ev.Snapshot.Value.(payment).Status)
	}
	fmt.Println("completed:", sub.Err() == nil)
	// Output:
	// FAILED
	// completed: true
}

// TestCheckoutSessionFollowsPayment watches a session by its reference (the
// fetch of the other kind) while the sandbox's admin endpoint refunds it.
func TestCheckoutSessionFollowsPayment(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	h := newHub(t, livepoll.Config{Interval: 10 * time.Millisecond})
	byID := map[string]string{}
	for _, p := range e.sb.Payments(e.a.APIKey) {
		byID[p.ID] = p.Status
	}
	var ref string
	for _, cs := range e.sb.CheckoutSessions(e.a.APIKey) {
		if byID[cs.PaymentID] == sandbox.StatusSucceeded {
			ref = cs.Reference
		}
	}
	if ref == "" {
		t.Skip("no settled session in the demo data")
	}
	type session struct {
		Data struct {
			Status        string `json:"status"`
			PaymentStatus string `json:"payment_status"`
		} `json:"data"`
	}
	fetch := func(ctx context.Context) (livepoll.Snapshot, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.base+"/api/v1/checkout/sessions/"+ref, nil)
		req.Header.Set("x-api-key", e.a.APIKey)
		req.Header.Set("x-api-secret", e.a.APISecret)
		res, err := e.client.Do(req)
		if err != nil {
			return livepoll.Snapshot{}, err
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		var s session
		if err := json.Unmarshal(body, &s); err != nil || res.StatusCode != http.StatusOK {
			return livepoll.Snapshot{}, livepoll.Permanent(&restError{res.StatusCode, string(body)})
		}
		return livepoll.Snapshot{Value: s, Fingerprint: string(body), Phase: phase(s.Data.PaymentStatus)}, nil
	}
	sub, err := h.Subscribe(context.Background(), livepoll.Key{Merchant: merchantKey(e.a), Kind: "checkout_session", ID: ref}, fetch)
	if err != nil {
		t.Fatal(err)
	}
	ev, _ := next(t, sub)
	if ev.Err != nil || ev.Snapshot.Value.(session).Data.PaymentStatus != sandbox.StatusSucceeded {
		t.Fatalf("first event %+v", ev)
	}
	if err := e.sb.SetCheckoutSessionStatus(e.a.APIKey, ref, sandbox.StatusRefunded); err != nil {
		t.Fatal(err)
	}
	ev, _ = next(t, sub)
	if s, ok := ev.Snapshot.Value.(session); !ok || s.Data.PaymentStatus != sandbox.StatusRefunded || s.Data.Status != sandbox.StatusSucceeded {
		t.Errorf("event %+v", ev)
	}
	if _, ok := next(t, sub); ok || sub.Err() != nil {
		t.Errorf("not completed after REFUNDED: %v", sub.Err())
	}
}
