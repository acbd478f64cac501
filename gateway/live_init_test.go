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

	t.Run("silent connection closed", func(t *testing.T) {
		c, _, err := websocket.Dial(ctx, strings.Replace(g.URL, "http", "ws", 1)+"/graphql",
			&websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		start := time.Now()
		_, _, err = c.Read(ctx)
		took := time.Since(start)
		var ce websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != websocket.StatusProtocolError || !strings.Contains(ce.Reason, "initialisation timeout") {
			t.Fatalf("read: %v; want the init timeout's close", err)
		}
		if took > 3*time.Second {
			t.Fatalf("closed after %v, want about the init timeout (300ms)", took)
		}
		t.Logf("closed %v after the upgrade: %v", took.Round(time.Millisecond), err)
	})
	t.Run("initialised connection kept", func(t *testing.T) {
		b := g.Biz[0]
		c, err := wsOpen(t, ctx, g.URL, map[string]any{"x-api-key": b.APIKey, "x-api-secret": b.APISecret})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(600 * time.Millisecond) // twice the init timeout
		next, errs := wsRun(t, ctx, c, "1", map[string]any{"query": `{ __typename }`})
		if errs != nil || !strings.Contains(string(next), "Query") {
			t.Fatalf("after the init timeout: next %s, errors %s", next, errs)
		}
	})
}
