package gateway_test

// Live status over real HTTP: subscriptions through the SSE
// (graphql-sse, distinct connections) and WebSocket (graphql-transport-ws)
// transports, against the sandbox, whose admin API moves a payment.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"paygraph/sandbox"
)

const paymentSub = `subscription($id: ID!) { paymentUpdated(id: $id) { id status updatedAt } }`

// liveEvent is one event of a subscription: a payload, or the end of the
// stream (done).
type liveEvent struct {
	Data struct {
		PaymentUpdated *struct{ ID, Status string } `json:"paymentUpdated"`
	} `json:"data"`
	Errors []struct {
		Message    string
		Extensions struct{ Code string }
	} `json:"errors"`
	Extensions struct {
		EventID string `json:"eventId"`
	} `json:"extensions"`
	sseID string // the SSE event's id: field
	done  bool
}

func (e liveEvent) status() string {
	if e.Data.PaymentUpdated == nil {
		return ""
	}
	return e.Data.PaymentUpdated.Status
}

func (e liveEvent) code() string {
	if len(e.Errors) == 0 {
		return ""
	}
	return e.Errors[0].Extensions.Code
}

// sseSubscribe opens a graphql-sse stream (distinct connections mode) and
// returns its events; the stream closes when ctx ends.
func sseSubscribe(t *testing.T, ctx context.Context, url string, h http.Header, query string, vars map[string]any) <-chan liveEvent {
	t.Helper()
	return sseSubscribeBody(t, ctx, url, h, map[string]any{"query": query, "variables": vars})
}

// sseSubscribeBody is sseSubscribe with the request's body as given (a
// documentId instead of the query, say).
func sseSubscribeBody(t *testing.T, ctx context.Context, url string, h http.Header, request map[string]any) <-chan liveEvent {
	t.Helper()
	body, _ := json.Marshal(request)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/graphql", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "text/event-stream") {
		resp.Body.Close()
		t.Fatalf("SSE answer %d %q", resp.StatusCode, ct)
	}
	out := make(chan liveEvent, 16)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		event, id := "", ""
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				event, id = "", ""
			case strings.HasPrefix(line, "id: "):
				id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: "):
				event = strings.TrimPrefix(line, "event: ")
				if event == "complete" {
					out <- liveEvent{done: true}
					return
				}
			case strings.HasPrefix(line, "data: ") && event == "next":
				var ev liveEvent
				if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev); err != nil {
					t.Errorf("SSE data: %v", err)
					return
				}
				ev.sseID = id
				select {
				case out <- ev:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out
}

// wsConn is one graphql-transport-ws connection, acknowledged.
type wsConn struct {
	c *websocket.Conn
}

type wsMsg struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

func wsDial(t *testing.T, ctx context.Context, url string, initPayload map[string]any) (*wsConn, error) {
	t.Helper()
	c, _, err := websocket.Dial(ctx, strings.Replace(url, "http", "ws", 1)+"/graphql",
		&websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := json.Marshal(initPayload)
	if err := wsjson.Write(ctx, c, wsMsg{Type: "connection_init", Payload: p}); err != nil {
		t.Fatal(err)
	}
	var ack wsMsg
	if err := wsjson.Read(ctx, c, &ack); err != nil {
		c.CloseNow()
		return nil, err
	}
	if ack.Type != "connection_ack" {
		t.Fatalf("first message %q, want connection_ack", ack.Type)
	}
	return &wsConn{c: c}, nil
}

// subscribe starts operation id and returns its events; every message of
// the connection goes to the subscription it names (one reader).
func (w *wsConn) run(t *testing.T, ctx context.Context, subs map[string]chan liveEvent) {
	go func() {
		for {
			var m wsMsg
			if err := wsjson.Read(ctx, w.c, &m); err != nil {
				for _, c := range subs {
					close(c)
				}
				return
			}
			c := subs[m.ID]
			switch m.Type {
			case "ping":
				_ = wsjson.Write(ctx, w.c, wsMsg{Type: "pong"})
			case "next":
				var ev liveEvent
				if err := json.Unmarshal(m.Payload, &ev); err != nil {
					t.Errorf("ws payload: %v", err)
				}
				c <- ev
			case "error":
				var errs []struct {
					Message    string
					Extensions struct{ Code string }
				}
				_ = json.Unmarshal(m.Payload, &errs)
				c <- liveEvent{Errors: errs}
			case "complete":
				c <- liveEvent{done: true}
			}
		}
	}()
}

func (w *wsConn) subscribe(t *testing.T, ctx context.Context, id, query string, vars map[string]any) {
	t.Helper()
	p, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err := wsjson.Write(ctx, w.c, wsMsg{ID: id, Type: "subscribe", Payload: p}); err != nil {
		t.Fatal(err)
	}
}

// next waits for the next event; the wait is a hang guard, never a
// measurement.
func next(t *testing.T, c <-chan liveEvent) liveEvent {
	t.Helper()
	select {
	case ev, ok := <-c:
		if !ok {
			t.Fatal("stream ended without complete")
		}
		return ev
	case <-time.After(20 * time.Second):
		t.Fatal("no event in 20s")
	}
	return liveEvent{}
}

// pendingPayment is one of b's PENDING payments in the sandbox.
func pendingPayment(t *testing.T, s *sandbox.Server, b sandbox.Business, skip int) string {
	t.Helper()
	for _, p := range s.Payments(b.APIKey) {
		if p.Status == "PENDING" {
			if skip == 0 {
				return p.ID
			}
			skip--
		}
	}
	t.Fatal("no PENDING payment")
	return ""
}

// fastPolls are settings under which a change is seen within a few tens
// of milliseconds.
func fastPolls(env map[string]string) map[string]string {
	env = unlimited(env)
	env["SUBSCRIPTION_POLL_INTERVAL"] = "20ms"
	return env
}

// TestSubscriptionOverSSE: the current state at once, a change made in
// the sandbox, and completion at a terminal state.
func TestSubscriptionOverSSE(t *testing.T) {
	t.Parallel()
	g := startGateway(t, setup{env: fastPolls(nil)})
	b := g.Biz[0]
	id := pendingPayment(t, g.Sandbox, b, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := sseSubscribe(t, ctx, g.URL, creds(b), paymentSub, map[string]any{"id": id})

	if ev := next(t, events); ev.status() != "PENDING" || ev.Data.PaymentUpdated.ID != id {
		t.Fatalf("first event %+v, want %s PENDING", ev, id)
	}
	if err := g.Sandbox.SetPaymentStatus(b.APIKey, id, "FAILED"); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, events); ev.status() != "FAILED" {
		t.Fatalf("second event %+v, want FAILED", ev)
	}
	if ev := next(t, events); !ev.done {
		t.Fatalf("after FAILED: %+v, want complete", ev)
	}
}

// TestSubscriptionOverWebSocket: the same over graphql-transport-ws, with
// the credentials in connection_init (as a browser sends them), and a
// second subscription on the connection that completes at REFUNDED after
// SUCCEEDED.
func TestSubscriptionOverWebSocket(t *testing.T) {
	t.Parallel()
	g := startGateway(t, setup{env: fastPolls(nil)})
	b := g.Biz[0]
	id := pendingPayment(t, g.Sandbox, b, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := wsDial(t, ctx, g.URL, map[string]any{"x-api-key": b.APIKey, "x-api-secret": b.APISecret})
	if err != nil {
		t.Fatal(err)
	}
	defer w.c.CloseNow()
	subs := map[string]chan liveEvent{"1": make(chan liveEvent, 16)}
	w.run(t, ctx, subs)
	w.subscribe(t, ctx, "1", paymentSub, map[string]any{"id": id})

	if ev := next(t, subs["1"]); ev.status() != "PENDING" {
		t.Fatalf("first event %+v, want PENDING", ev)
	}
	for _, st := range []string{"SUCCEEDED", "REFUNDED"} {
		if err := g.Sandbox.SetPaymentStatus(b.APIKey, id, st); err != nil {
			t.Fatal(err)
		}
		if ev := next(t, subs["1"]); ev.status() != st {
			t.Fatalf("event %+v, want %s", ev, st)
		}
	}
	if ev := next(t, subs["1"]); !ev.done {
		t.Fatalf("after REFUNDED: %+v, want complete", ev)
	}
	w.c.Close(websocket.StatusNormalClosure, "")
}

// TestSubscriptionRefusals: what is refused at subscribe time, before any
// REST call, with the contract's codes.
func TestSubscriptionRefusals(t *testing.T) {
	t.Parallel()
	g := startGateway(t, setup{env: fastPolls(nil)})
	b := g.Biz[0]
	for _, tc := range []struct {
		name     string
		h        http.Header
		id, code string
	}{
		{"invalid id", creds(b), "pay_bad id!", "BAD_USER_INPUT"},
		{"not a payment id", creds(b), "pl_abc", "BAD_USER_INPUT"},
		{"no credentials", nil, "pay_prod_abc", "UNAUTHENTICATED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g.Sandbox.ResetCalls()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			events := sseSubscribe(t, ctx, g.URL, tc.h, paymentSub, map[string]any{"id": tc.id})
			if ev := next(t, events); ev.code() != tc.code {
				t.Errorf("event %+v, want code %s", ev, tc.code)
			}
			if n := g.Sandbox.CallCount(""); n != 0 {
				t.Errorf("%d REST calls, want none", n)
			}
		})
	}
}

// TestSubscriptionSharedPoll: 100 subscribers of one payment cost one
// REST call. The interval is an hour, so that exactly one poll (the first,
// made at once) falls in the test: the count is exact, not a rate.
func TestSubscriptionSharedPoll(t *testing.T) {
	t.Parallel()
	env := unlimited(nil)
	env["SUBSCRIPTION_POLL_INTERVAL"] = "1h"
	env["Config.Subscriptions.MaxPerMerchant"] = "200"
	g := startGateway(t, setup{env: env})
	b := g.Biz[0]
	id := pendingPayment(t, g.Sandbox, b, 0)
	g.Sandbox.ResetCalls()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const n = 100
	streams := make([]<-chan liveEvent, n)
	for i := range streams {
		streams[i] = sseSubscribe(t, ctx, g.URL, creds(b), paymentSub, map[string]any{"id": id})
	}
	for i, s := range streams {
		if ev := next(t, s); ev.status() != "PENDING" {
			t.Fatalf("subscriber %d: first event %+v", i, ev)
		}
	}
	if got := g.Sandbox.CallCount(sandbox.RoutePayment); got != 1 {
		t.Errorf("%d subscribers made %d REST calls, want 1", n, got)
	}
}

// TestSubscriptionMerchantsApart: two merchants, each subscribed to its
// own payment, see only their own events; one subscribing to the other's
// id gets NOT_FOUND (the REST API's answer for its own pair), never the
// payment.
func TestSubscriptionMerchantsApart(t *testing.T) {
	t.Parallel()
	g := startGateway(t, setup{env: fastPolls(nil)})
	a, b := g.Biz[0], g.Biz[1]
	idA, idB := pendingPayment(t, g.Sandbox, a, 0), pendingPayment(t, g.Sandbox, b, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	evA := sseSubscribe(t, ctx, g.URL, creds(a), paymentSub, map[string]any{"id": idA})
	evB := sseSubscribe(t, ctx, g.URL, creds(b), paymentSub, map[string]any{"id": idB})
	for name, tc := range map[string]struct {
		c  <-chan liveEvent
		id string
	}{"a": {evA, idA}, "b": {evB, idB}} {
		if ev := next(t, tc.c); ev.Data.PaymentUpdated == nil || ev.Data.PaymentUpdated.ID != tc.id {
			t.Fatalf("merchant %s: first event %+v, want its %s", name, ev, tc.id)
		}
	}
	// While a's poller of idA runs: b's subscription to the same id is
	// polled with b's own pair, never joined to a's.
	cross := sseSubscribe(t, ctx, g.URL, creds(b), paymentSub, map[string]any{"id": idA})
	if ev := next(t, cross); ev.code() != "NOT_FOUND" || ev.Data.PaymentUpdated != nil {
		t.Fatalf("b subscribing to a's payment: %+v, want NOT_FOUND and no data", ev)
	}
	if ev := next(t, cross); !ev.done {
		t.Fatalf("after NOT_FOUND: %+v, want complete", ev)
	}
	if err := g.Sandbox.SetPaymentStatus(a.APIKey, idA, "CANCELLED"); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, evA); ev.status() != "CANCELLED" {
		t.Fatalf("merchant a: %+v, want CANCELLED", ev)
	}
	select {
	case ev := <-evB:
		t.Fatalf("merchant b got an event of a's change: %+v", ev)
	default:
	}

}

// TestSubscriptionDisconnectFreesAll: clients that leave free their
// subscriptions and pollers (the gauges say 0), and the package's goleak
// TestMain finds no goroutine left.
func TestSubscriptionDisconnectFreesAll(t *testing.T) {
	t.Parallel()
	g := startGateway(t, setup{env: fastPolls(nil)})
	b := g.Biz[0]
	ctx, cancel := context.WithCancel(context.Background())
	sse := sseSubscribe(t, ctx, g.URL, creds(b), paymentSub, map[string]any{"id": pendingPayment(t, g.Sandbox, b, 0)})
	w, err := wsDial(t, ctx, g.URL, map[string]any{"x-api-key": b.APIKey, "x-api-secret": b.APISecret})
	if err != nil {
		t.Fatal(err)
	}
	subs := map[string]chan liveEvent{"1": make(chan liveEvent, 16)}
	w.run(t, ctx, subs)
	w.subscribe(t, ctx, "1", paymentSub, map[string]any{"id": pendingPayment(t, g.Sandbox, b, 1)})
	next(t, sse)
	next(t, subs["1"])
	if got := metric(t, g.URL, "paygraph_subscriptions_active"); got != "2" {
		t.Errorf("active subscriptions %s, want 2", got)
	}
	cancel()
	w.c.CloseNow()
	// The gauges reach 0 once the server sees the disconnects.
	waitFor(t, func() bool {
		return metric(t, g.URL, "paygraph_subscriptions_active") == "0" && metric(t, g.URL, "paygraph_subscription_pollers_active") == "0"
	})
}

// metric reads one unlabelled series from /metrics.
func metric(t *testing.T, url, name string) string {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			return v
		}
	}
	return ""
}

// TestSubscriptionWebSocketInitRefused: connection_init credentials pass
// the same readers as headers: a session token that does not verify
// closes the connection before any subscription or REST call.
func TestSubscriptionWebSocketInitRefused(t *testing.T) {
	t.Parallel()
	g := startGateway(t, setup{env: fastPolls(nil)})
	b := g.Biz[0]
	for _, tc := range []struct {
		name    string
		payload map[string]any
	}{
		{"bad session token", map[string]any{"Authorization": "Bearer not-a-token"}},
		{"token and pair", map[string]any{"authorization": "Bearer x", "x-api-key": b.APIKey, "x-api-secret": b.APISecret}},
		{"key not a string", map[string]any{"x-api-key": 1, "x-api-secret": b.APISecret}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g.Sandbox.ResetCalls()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			w, err := wsDial(t, ctx, g.URL, tc.payload)
			if err == nil {
				w.c.CloseNow()
				t.Fatal("connection acknowledged, want it closed")
			}
			if got := websocket.CloseStatus(err); got == -1 {
				t.Errorf("read error %v, want a close frame", err)
			}
			if n := g.Sandbox.CallCount(""); n != 0 {
				t.Errorf("%d REST calls, want none", n)
			}
		})
	}
}

// TestSubscriptionLifetimeCompletes: at Config.Subscriptions.MaxLifetime the
// stream completes while its last state is not terminal, which tells the
// client to subscribe again (docs/clients.md "Live status"); no error event.
func TestSubscriptionLifetimeCompletes(t *testing.T) {
	env := fastPolls(nil)
	env["Config.Subscriptions.MaxLifetime"] = "200ms"
	g := startGateway(t, setup{env: env})
	b := g.Biz[0]
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := sseSubscribe(t, ctx, g.URL, creds(b), paymentSub, map[string]any{"id": pendingPayment(t, g.Sandbox, b, 0)})
	if ev := next(t, events); ev.status() != "PENDING" {
		t.Fatalf("first event %+v, want PENDING", ev)
	}
	if ev := next(t, events); !ev.done {
		t.Fatalf("at the lifetime: %+v, want complete", ev)
	}
}
