package gqlhttp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"paygraph/graph/errcode"
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
	"paygraph/restclient"
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

// holdREST is a REST API whose payment reads wait until release closes
// (or their context ends); anything else panics.
type holdREST struct {
	noREST
	release chan struct{}
}

func (r holdREST) GetPayment(ctx context.Context, _ string) (*restclient.Payment, error) {
	select {
	case <-r.release:
	case <-ctx.Done():
	}
	return nil, errors.New("held")
}

// TestWebSocketRefusedOperationReleased: on one WebSocket that stays
// open, an operation refused by the rate limit or by the connection's
// cap of operations in flight is unreachable (its variables, document
// and cost plan with it) once its refusal is written: the connection
// keeps nothing of its operations.
func TestWebSocketRefusedOperationReleased(t *testing.T) {
	t.Parallel()
	ids := make([]string, 100)
	for i := range ids {
		ids[i] = fmt.Sprintf("pay_refused_%03d", i)
	}
	nodes := `query($ids: [ID!]!) { nodes(ids: $ids) { id } }`
	for _, tc := range []struct {
		name string
		// spent is the REST calls of the budget (100) spent first; hold,
		// whether one operation is held in flight first, against a cap
		// of one.
		spent int
		hold  bool
		query string
		vars  map[string]any
		code  string // every refused operation's
	}{
		{"refused by the rate limit", 100, false, nodes, map[string]any{"ids": ids}, errcode.RateLimited},
		{"refused by the operations in flight", 0, true, `query($id: ID!) { payment(id: $id) { id } }`, map[string]any{"id": ids[0]}, errcode.RateLimited},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			limiter, err := ratelimit.New(ratelimit.Config{RESTCallsPerSecond: 1, RESTBurst: 100})
			if err != nil {
				t.Fatal(err)
			}
			if tc.spent > 0 {
				if d := limiter.Allow(context.Background(), "merchant", tc.spent); !d.Allowed {
					t.Fatalf("spending the budget: %+v", d)
				}
			}
			tracker := &opTracker{}
			srv := graph.NewServer(graph.ServerConfig{MaxComplexity: 1000, Extensions: []graphql.HandlerExtension{tracker}})
			gqlhttp.AddTransports(srv, 0, gqlhttp.Live{
				Budget: gqlhttp.NewAdmission(gqlhttp.AdmissionConfig{Merchants: limiter,
					Merchant: func(context.Context) (string, bool) { return "merchant", true }}).OperationBudget(),
				MaxOperations: 1,
			})
			rest := holdREST{release: make(chan struct{})}
			defer close(rest.release)
			h := gqlhttp.Credentials(graph.LoadersMiddleware(rest, nil)(srv))
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
			held := 0
			if tc.hold {
				// In flight until the test ends: the read loop has taken
				// its slot before it reads the next message.
				p, _ := json.Marshal(map[string]any{"query": `query($id: ID!) { payment(id: $id) { id } }`, "variables": map[string]any{"id": "pay_held"}})
				if err := wsjson.Write(ctx, c, liveMsg{ID: "held", Type: "subscribe", Payload: p}); err != nil {
					t.Fatal(err)
				}
				held = 1
			}

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
					if m.ID != id {
						continue
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
			// A ping answered: the read loop is past the last refusal,
			// which it wrote itself (a refused operation has no goroutine).
			exchange(liveMsg{Type: "ping"}, "pong")
			live, all := tracker.live()
			if all != n+held {
				t.Fatalf("%d operation contexts made, want %d", all, n+held)
			}
			if live != held {
				t.Errorf("%d of %d refused operations still reachable with their connection open, want 0", live-held, n)
			}
		})
	}
}
