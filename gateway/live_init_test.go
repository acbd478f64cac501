package gateway_test

// A WebSocket that never proves anything (no connection_init) lives
// the init timeout (10 s), not as long as the client likes (issue 21).

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestWebSocketInitTimeout: a WebSocket that sends nothing after its
// upgrade is closed at the init timeout (1002, "connection initialisation
// timeout"), and one that sent its connection_init in time is not.
func TestWebSocketInitTimeout(t *testing.T) {
	g := startGateway(t, setup{env: map[string]string{"Config.LiveInitTimeout": "300ms"}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The initialised connection is opened first: when the silent one is
	// closed at its init timeout, the initialised one's has passed too.
	b := g.Biz[0]
	kept, err := wsOpen(t, ctx, g.URL, map[string]any{"x-api-key": b.APIKey, "x-api-secret": b.APISecret})
	if err != nil {
		t.Fatal(err)
	}
	silent, _, err := websocket.Dial(ctx, strings.Replace(g.URL, "http", "ws", 1)+"/graphql",
		&websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		t.Fatal(err)
	}
	defer silent.CloseNow()
	_, _, err = silent.Read(ctx)
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.StatusProtocolError || !strings.Contains(ce.Reason, "initialisation timeout") {
		t.Fatalf("silent connection: read %v; want the init timeout's close", err)
	}
	next, errs := wsRun(t, ctx, kept, "1", map[string]any{"query": `{ __typename }`})
	if errs != nil || !strings.Contains(string(next), "Query") {
		t.Fatalf("initialised connection, after the init timeout: next %s, errors %s", next, errs)
	}
}
