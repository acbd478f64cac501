package gateway_test

// Every operation is a request (issue 21): each operation of a WebSocket
// gets its own scope (fresh loaders, rate-limit charge, token check,
// deadline, access-log line), and the live connections are bounded.

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"paygraph/gateway"
	"paygraph/internal/testenv"
	"paygraph/sandbox"
)

const paymentStatusQuery = `query($id: ID!) { payment(id: $id) { id status } }`

// wsOpen dials /graphql with graphql-transport-ws and sends connection_init
// with payload; it returns the connection and the first message's type
// (connection_ack), or the read error (a close).
func wsOpen(t *testing.T, ctx context.Context, url string, payload map[string]any) (*websocket.Conn, error) {
	t.Helper()
	w, err := wsDial(t, ctx, url, payload)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { w.c.CloseNow() })
	return w.c, nil
}

// wsResult is one operation's answer over a WebSocket.
type wsResult struct {
	Data   json.RawMessage
	Errors []struct {
		Message    string
		Extensions struct{ Code string }
	}
}

func (r wsResult) code() string {
	if len(r.Errors) == 0 {
		return ""
	}
	return r.Errors[0].Extensions.Code
}

// wsRun sends payload as operation id on c and reads until its end
// (answering pings): its last next payload and its error payload, raw.
func wsRun(t *testing.T, ctx context.Context, c *websocket.Conn, id string, payload map[string]any) (next, errs []byte) {
	t.Helper()
	p, _ := json.Marshal(payload)
	if err := wsjson.Write(ctx, c, wsMsg{ID: id, Type: "subscribe", Payload: p}); err != nil {
		t.Fatal(err)
	}
	for {
		var m wsMsg
		if err := wsjson.Read(ctx, c, &m); err != nil {
			t.Fatalf("operation %s: %v", id, err)
		}
		switch {
		case m.Type == "ping":
			_ = wsjson.Write(ctx, c, wsMsg{Type: "pong"})
		case m.ID != id:
		case m.Type == "next":
			next = m.Payload
		case m.Type == "error":
			return next, m.Payload
		case m.Type == "complete":
			return next, nil
		}
	}
}

// wsOp runs one operation on c (wsRun): its next payload, or its error.
func wsOp(t *testing.T, ctx context.Context, c *websocket.Conn, id, query string, vars map[string]any) wsResult {
	t.Helper()
	next, errs := wsRun(t, ctx, c, id, map[string]any{"query": query, "variables": vars})
	var res wsResult
	if next != nil {
		if err := json.Unmarshal(next, &res); err != nil {
			t.Fatal(err)
		}
	}
	if errs != nil {
		if err := json.Unmarshal(errs, &res.Errors); err != nil {
			t.Fatal(err)
		}
	}
	return res
}

func pairPayload(b sandbox.Business) map[string]any {
	return map[string]any{"x-api-key": b.APIKey, "x-api-secret": b.APISecret}
}

// TestWebSocketFreshLoadersPerOperation: a payment read twice on one
// connection is fetched twice (one REST call per operation) and the second
// read sees its new status; a failed call is not remembered either.
func TestWebSocketFreshLoadersPerOperation(t *testing.T) {
	sb := sandbox.New(sandbox.Options{})
	var fail atomic.Bool
	rest := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fail.Load() {
			http.Error(w, `{"error":"unavailable"}`, http.StatusServiceUnavailable)
			return
		}
		sb.ServeHTTP(w, r)
	})
	g := startGateway(t, setup{env: unlimited(map[string]string{"REST_MAX_RETRIES": "0", "BREAKER_FAILURES": "0"}), rest: rest})
	b := sb.Businesses()[0]
	id := pendingPayment(t, sb, b, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := wsOpen(t, ctx, g.URL, pairPayload(b))
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]any{"id": id}
	status := func(r wsResult) string {
		var d struct{ Payment struct{ Status string } }
		_ = json.Unmarshal(r.Data, &d)
		return d.Payment.Status
	}

	sb.ResetCalls()
	if r := wsOp(t, ctx, c, "1", paymentStatusQuery, vars); status(r) != "PENDING" {
		t.Fatalf("first read %+v, want PENDING", r)
	}
	if err := sb.SetPaymentStatus(b.APIKey, id, "SUCCEEDED"); err != nil {
		t.Fatal(err)
	}
	if r := wsOp(t, ctx, c, "2", paymentStatusQuery, vars); status(r) != "SUCCEEDED" {
		t.Fatalf("second read %+v, want SUCCEEDED (not the first operation's cache)", r)
	}
	if n := sb.CallCount(sandbox.RoutePayment); n != 2 {
		t.Errorf("%d REST calls for two operations, want 2", n)
	}

	fail.Store(true)
	if r := wsOp(t, ctx, c, "3", paymentStatusQuery, vars); r.code() != "UPSTREAM_ERROR" {
		t.Fatalf("read while the REST API fails: %+v, want UPSTREAM_ERROR", r)
	}
	fail.Store(false)
	if r := wsOp(t, ctx, c, "4", paymentStatusQuery, vars); status(r) != "SUCCEEDED" {
		t.Fatalf("read after recovery %+v, want SUCCEEDED (the failure is not sticky)", r)
	}
}

// TestWebSocketOperationsRateLimited: credentials sent in connection_init
// (the only way a browser has) are charged per operation: with a burst of
// 5 requests, an operation past it is RATE_LIMITED and makes no REST call.
func TestWebSocketOperationsRateLimited(t *testing.T) {
	g := startGateway(t, setup{env: map[string]string{
		"RATE_LIMIT_REQUESTS_PER_SECOND": "1", "Config.RateLimitRequestsBurst": "5",
	}})
	b := g.Biz[0]
	id := pendingPayment(t, g.Sandbox, b, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := wsOpen(t, ctx, g.URL, pairPayload(b))
	if err != nil {
		t.Fatal(err)
	}
	g.Sandbox.ResetCalls()
	var ok, limited int
	for i := range 10 {
		r := wsOp(t, ctx, c, string(rune('a'+i)), paymentStatusQuery, map[string]any{"id": id})
		switch r.code() {
		case "":
			ok++
		case "RATE_LIMITED":
			limited++
		default:
			t.Fatalf("operation %d: %+v", i, r)
		}
	}
	// The upgrade was one request of the burst of 5.
	if ok > 5 || limited < 5 {
		t.Errorf("%d operations served, %d refused; want at most 5 served", ok, limited)
	}
	if n := g.Sandbox.CallCount(""); n != ok {
		t.Errorf("%d REST calls for %d operations served", n, ok)
	}
}

// TestWebSocketAnonymousRefused: a connection_init without credentials
// closes the connection, 4403.
func TestWebSocketAnonymousRefused(t *testing.T) {
	g := startGateway(t, setup{})
	for _, tc := range []struct {
		name    string
		payload map[string]any
	}{
		{"empty payload", map[string]any{}},
		{"key without secret", map[string]any{"x-api-key": g.Biz[0].APIKey}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := wsOpen(t, ctx, g.URL, tc.payload)
			if got := websocket.CloseStatus(err); got != 4403 {
				t.Errorf("close %v (%v), want 4403", got, err)
			}
		})
	}
}

// TestWebSocketLegacySubprotocolRefused: only graphql-transport-ws is
// served; graphql-ws (or none) is refused before the upgrade.
func TestWebSocketLegacySubprotocolRefused(t *testing.T) {
	g := startGateway(t, setup{})
	for _, tc := range []struct {
		name  string
		proto []string
	}{
		{"graphql-ws", []string{"graphql-ws"}},
		{"none", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, resp, err := websocket.Dial(ctx, strings.Replace(g.URL, "http", "ws", 1)+"/graphql",
				&websocket.DialOptions{Subprotocols: tc.proto})
			if err == nil {
				c.CloseNow()
				t.Fatal("upgraded, want a refusal")
			}
			if resp == nil || resp.StatusCode != http.StatusBadRequest {
				t.Errorf("answer %v, want 400", resp)
			}
		})
	}
}

// TestLiveConnectionCap: past the live connections cap (Config.LiveMaxConnections) an upgrade is refused
// with 503 before it happens; a POST is still served.
func TestLiveConnectionCap(t *testing.T) {
	g := startGateway(t, setup{env: unlimited(map[string]string{"Config.LiveMaxConnections": "2"})})
	b := g.Biz[0]
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range 2 {
		if _, err := wsOpen(t, ctx, g.URL, pairPayload(b)); err != nil {
			t.Fatal(err)
		}
	}
	c, resp, err := websocket.Dial(ctx, strings.Replace(g.URL, "http", "ws", 1)+"/graphql",
		&websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err == nil {
		c.CloseNow()
		t.Fatal("third connection upgraded, want 503")
	}
	if resp == nil || resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("answer %v, want 503 with Retry-After", resp)
	}
	r := g.Do(t, http.MethodPost, "/graphql", creds(b), []byte(`{"query":"{ payments(first: 1) { edges { node { id } } } }"}`))
	if r.Status != http.StatusOK || len(r.Errors) != 0 {
		t.Errorf("POST while the live connections are full: %d %+v", r.Status, r.Errors)
	}
	// The gauges an alert reads (PaygraphConnectionsNearLimit): both
	// connections held, against the cap of 2.
	series, _ := scrape(t, g)
	for name, want := range map[string]float64{
		`paygraph_connections{kind="live"}`:       2,
		`paygraph_connections_limit{kind="live"}`: 2,
	} {
		if got, ok := series[name]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", name, got, ok, want)
		}
	}
}

// TestHTTPConnectionsGauge: the listener's connections and their cap
// (HTTP_MAX_CONNECTIONS) are on /metrics, read from the listener itself.
func TestHTTPConnectionsGauge(t *testing.T) {
	url := startGateway(t, setup{env: map[string]string{"HTTP_MAX_CONNECTIONS": "50"}, process: true}).URL
	g := newTestGateway(url)
	series, _ := scrape(t, g)
	if got := series[`paygraph_connections_limit{kind="http"}`]; got != 50 {
		t.Errorf("http connections limit = %v, want 50", got)
	}
	// At least the scrape's own connection is held while it is served.
	if got := series[`paygraph_connections{kind="http"}`]; got < 1 || got > 50 {
		t.Errorf("http connections = %v, want 1..50", got)
	}
}

// TestWebSocketMaxOperations: past Config.LiveMaxOperations in flight, an
// operation is refused (RATE_LIMITED) without running.
func TestWebSocketMaxOperations(t *testing.T) {
	g := startGateway(t, setup{env: unlimited(map[string]string{"Config.LiveMaxOperations": "2"})})
	b := g.Biz[0]
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := wsOpen(t, ctx, g.URL, pairPayload(b))
	if err != nil {
		t.Fatal(err)
	}
	// Two subscriptions stay in flight.
	for _, id := range []string{"s1", "s2"} {
		p, _ := json.Marshal(map[string]any{"query": paymentSub, "variables": map[string]any{"id": pendingPayment(t, g.Sandbox, b, 0)}})
		if err := wsjson.Write(ctx, c, wsMsg{ID: id, Type: "subscribe", Payload: p}); err != nil {
			t.Fatal(err)
		}
	}
	if r := wsOp(t, ctx, c, "q", `{ __typename }`, nil); r.code() != "RATE_LIMITED" {
		t.Errorf("third operation: %+v, want RATE_LIMITED", r)
	}
	if err := wsjson.Write(ctx, c, wsMsg{ID: "s1", Type: "complete"}); err != nil {
		t.Fatal(err)
	}
	// Once s1 ended, an operation runs again (its end is asynchronous:
	// retried until it does).
	ops := 0
	waitFor(t, func() bool {
		ops++
		return wsOp(t, ctx, c, "q"+strconv.Itoa(ops), `{ __typename }`, nil).code() == ""
	})
}

// TestWebSocketTokenExpiry: a session token's next operation after its
// expiry is refused (UNAUTHENTICATED, no REST call), and its connection
// is closed at the expiry.
func TestWebSocketTokenExpiry(t *testing.T) {
	rig := startTokenRig(t, unlimited(nil))
	b := rig.Biz[0]
	id := pendingPayment(t, rig.Sandbox, b, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	t.Run("connection closed at expiry", func(t *testing.T) {
		a := rig.mint(t, creds(b), `{"ttlSeconds":1,"scope":{"kind":"all"}}`)
		exp, err := time.Parse(time.RFC3339Nano, a.ExpiresAt)
		if err != nil {
			t.Fatal(err)
		}
		c, err := wsOpen(t, ctx, rig.URL, map[string]any{"Authorization": "Bearer " + a.Token})
		if err != nil {
			t.Fatal(err)
		}
		for {
			var m wsMsg
			if err := wsjson.Read(ctx, c, &m); err != nil {
				break
			}
		}
		// (First: the subtest below moves the rig's clock on.)
		late := time.Since(exp)
		if late > time.Second {
			t.Errorf("connection closed %v after the token's expiry, want within 1s", late)
		}
	})
	t.Run("next operation refused", func(t *testing.T) {
		a := rig.mint(t, creds(b), `{"ttlSeconds":600,"scope":{"kind":"all"}}`)
		c, err := wsOpen(t, ctx, rig.URL, map[string]any{"Authorization": "Bearer " + a.Token})
		if err != nil {
			t.Fatal(err)
		}
		if r := wsOp(t, ctx, c, "1", paymentStatusQuery, map[string]any{"id": id}); r.code() != "" {
			t.Fatalf("before expiry: %+v", r)
		}
		rig.clock.Advance(601 * time.Second)
		rig.Sandbox.ResetCalls()
		if r := wsOp(t, ctx, c, "2", paymentStatusQuery, map[string]any{"id": id}); r.code() != "UNAUTHENTICATED" {
			t.Errorf("after expiry: %+v, want UNAUTHENTICATED", r)
		}
		if n := rig.Sandbox.CallCount(""); n != 0 {
			t.Errorf("%d REST calls after expiry, want none", n)
		}
	})
}

// TestWebSocketOperationAccessLog: one access-log line per operation.
func TestWebSocketOperationAccessLog(t *testing.T) {
	logs := new(testenv.LockedBuffer)
	logger := gateway.NewLogger(logs, gateway.Config{LogFormat: "json"})
	g := startGateway(t, setup{env: unlimited(nil), logger: logger})
	b := g.Biz[0]
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := wsOpen(t, ctx, g.URL, pairPayload(b))
	if err != nil {
		t.Fatal(err)
	}
	id := pendingPayment(t, g.Sandbox, b, 0)
	for _, op := range []string{"1", "2", "3"} {
		wsOp(t, ctx, c, op, `query Status($id: ID!) { payment(id: $id) { status } }`, map[string]any{"id": id})
	}
	c.Close(websocket.StatusNormalClosure, "")
	// The lines are written when each operation's context ends, just
	// after its complete: waited for.
	waitFor(t, func() bool { return strings.Count(logs.String(), `"msg":"operation"`) >= 3 })
	var lines int
	for _, l := range strings.Split(logs.String(), "\n") {
		if !strings.Contains(l, `"msg":"operation"`) {
			continue
		}
		lines++
		if !strings.Contains(l, `"operation":"Status"`) || !strings.Contains(l, `"rest_calls":1`) || !strings.Contains(l, `"transport":"websocket"`) {
			t.Errorf("operation line %s", l)
		}
	}
	if lines != 3 {
		t.Errorf("%d operation lines for 3 operations\n%s", lines, logs.String())
	}
	if strings.Contains(logs.String(), b.APISecret) {
		t.Error("a log line holds the secret")
	}
}

// TestLiveMaxLifetime: a WebSocket connection is closed at
// Config.LiveMaxLifetime, even while it is in use.
func TestLiveMaxLifetime(t *testing.T) {
	g := startGateway(t, setup{env: unlimited(map[string]string{"Config.LiveMaxLifetime": "300ms"})})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	began := time.Now()
	c, err := wsOpen(t, ctx, g.URL, pairPayload(g.Biz[0]))
	if err != nil {
		t.Fatal(err)
	}
	for {
		var m wsMsg
		if err := wsjson.Read(ctx, c, &m); err != nil {
			break
		}
	}
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("connection closed after %v, want about 300ms", d)
	}
}

// TestSSETokenExpiry: an SSE stream of a session token ends at the
// token's expiry.
func TestSSETokenExpiry(t *testing.T) {
	rig := startTokenRig(t, fastPolls(unlimited(nil)))
	b := rig.Biz[0]
	id := pendingPayment(t, rig.Sandbox, b, 0)
	a := rig.mint(t, creds(b), `{"ttlSeconds":1,"scope":{"kind":"all"}}`)
	exp, err := time.Parse(time.RFC3339Nano, a.ExpiresAt)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	events := sseSubscribe(t, ctx, rig.URL, bearer(a.Token), paymentSub, map[string]any{"id": id})
	if ev := next(t, events); ev.status() != "PENDING" {
		t.Fatalf("first event %+v", ev)
	}
	for ev := range events {
		if ev.done {
			break
		}
	}
	if late := time.Since(exp); late > time.Second {
		t.Errorf("stream ended %v after the token's expiry, want within 1s", late)
	}
}
