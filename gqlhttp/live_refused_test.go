package gqlhttp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"weak"

	"github.com/99designs/gqlgen/graphql"
	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"paygraph/gqlhttp"
	"paygraph/graph"
	"paygraph/ratelimit"
)

// opTracker is an extension that keeps a weak pointer to every operation
// context the server makes: an operation's decoded variables, document
// and (through its loaders) cost plan are reachable while its operation
// context is.
type opTracker struct {
	mu  sync.Mutex
	ops []weak.Pointer[graphql.OperationContext]
}

func (*opTracker) ExtensionName() string                   { return "opTracker" }
func (*opTracker) Validate(graphql.ExecutableSchema) error { return nil }

func (t *opTracker) MutateOperationContext(_ context.Context, op *graphql.OperationContext) *gqlerror.Error {
	t.mu.Lock()
	t.ops = append(t.ops, weak.Make(op))
	t.mu.Unlock()
	return nil
}

// live is how many of the tracked operation contexts are still reachable.
func (t *opTracker) live() (live, all int) {
	runtime.GC()
	runtime.GC()
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range t.ops {
		if p.Value() != nil {
			live++
		}
	}
	return live, len(t.ops)
}

type liveMsg struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// TestWebSocketRefusedOperationReleased: on one WebSocket that stays
// open, every operation, refused by the rate limit or served, is
// unreachable (its variables, document and cost plan with it) once its
// answer is written: the connection keeps nothing of its operations.
func TestWebSocketRefusedOperationReleased(t *testing.T) {
	t.Parallel()
	ids := make([]string, 100)
	for i := range ids {
		ids[i] = fmt.Sprintf("pay_refused_%03d", i)
	}
	for _, tc := range []struct {
		name  string
		query string
		vars  map[string]any
		code  string // every operation's
	}{
		{"refused by the rate limit", `query($ids: [ID!]!) { nodes(ids: $ids) { id } }`, map[string]any{"ids": ids}, graph.CodeRateLimited},
		{"served", `query($ids: [ID!]!) { __typename nodes(ids: $ids) @skip(if: true) { id } }`, map[string]any{"ids": ids}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// A budget of 100 REST calls, spent: a nodes(ids:) of 100 ids
			// (an estimate of 100) is refused before any call.
			limiter, err := ratelimit.New(ratelimit.Config{RESTCallsPerSecond: 1, RESTBurst: 100})
			if err != nil {
				t.Fatal(err)
			}
			if d := limiter.Allow(context.Background(), "merchant", 100); !d.Allowed {
				t.Fatalf("spending the budget: %+v", d)
			}
			tracker := &opTracker{}
			srv := graph.NewServer(graph.ServerConfig{MaxComplexity: 1000, Extensions: []graphql.HandlerExtension{tracker}})
			gqlhttp.AddTransports(srv, 0, gqlhttp.Live{
				Budget: gqlhttp.OperationBudget(limiter, func(context.Context) (string, bool) { return "merchant", true }),
			})
			h := gqlhttp.Credentials(graph.LoadersMiddleware(noREST{}, nil)(srv))
			ts := httptest.NewServer(h)
			defer ts.Close()

			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			hdr := http.Header{}
			hdr.Set("X-Api-Key", "key_refused_test")
			hdr.Set("X-Api-Secret", "secret_refused_test")
			c, _, err := websocket.Dial(ctx, strings.Replace(ts.URL, "http", "ws", 1),
				&websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}, HTTPHeader: hdr})
			if err != nil {
				t.Fatal(err)
			}
			defer c.CloseNow()
			exchange := func(out liveMsg, want string) liveMsg {
				t.Helper()
				if err := wsjson.Write(ctx, c, out); err != nil {
					t.Fatal(err)
				}
				for {
					var m liveMsg
					if err := wsjson.Read(ctx, c, &m); err != nil {
						t.Fatal(err)
					}
					if m.Type == want {
						return m
					}
				}
			}
			exchange(liveMsg{Type: "connection_init", Payload: json.RawMessage(`{}`)}, "connection_ack")

			const n = 20
			p, _ := json.Marshal(map[string]any{"query": tc.query, "variables": tc.vars})
			for i := range n {
				id := strconv.Itoa(i)
				if err := wsjson.Write(ctx, c, liveMsg{ID: id, Type: "subscribe", Payload: p}); err != nil {
					t.Fatal(err)
				}
				var code string
				for done := false; !done; {
					var m liveMsg
					if err := wsjson.Read(ctx, c, &m); err != nil {
						t.Fatal(err)
					}
					switch m.Type {
					case "next":
						var r struct {
							Errors []struct{ Extensions struct{ Code string } }
						}
						_ = json.Unmarshal(m.Payload, &r)
						if len(r.Errors) > 0 {
							code = r.Errors[0].Extensions.Code
						}
					case "error":
						t.Fatalf("operation %s: error %s", id, m.Payload)
					case "complete":
						done = true
					}
				}
				if code != tc.code {
					t.Fatalf("operation %s: code %q, want %q", id, code, tc.code)
				}
			}
			// A ping answered: the read loop is past the last operation.
			exchange(liveMsg{Type: "ping"}, "pong")
			// Each operation's goroutine (a served one's) ends after
			// its complete is written: wait for the GC to see them go.
			var live, all int
			for range 100 {
				if live, all = tracker.live(); live == 0 {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			if all != n {
				t.Fatalf("%d operation contexts made, want %d", all, n)
			}
			if live != 0 {
				t.Errorf("%d of %d operations still reachable with their connection open, want 0", live, all)
			}
		})
	}
}
