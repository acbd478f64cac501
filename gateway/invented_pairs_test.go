package gateway_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/coder/websocket"

	"paygraph/internal/gqltest"
)

// TestInventedPairOnWebSocketIsAnonymous: each operation of a WebSocket
// whose pair the REST API has not accepted draws on the shared anonymous
// budget, as a POST of it does, while an accepted merchant's operations
// on a socket of their own are charged to its own budget only.
func TestInventedPairOnWebSocketIsAnonymous(t *testing.T) {
	g := startGateway(t, setup{env: map[string]string{
		"REST_UNACCEPTED_CALLS_PER_SECOND": "20",
		"RATE_LIMIT_ANONYMOUS_PER_SECOND":  "1", "Config.RateLimitAnonymousBurst": "4",
		"REFUSAL_DELAY_MAX": "0",
	}})
	biz := g.Biz[0]
	c := gqltest.Client{URL: g.URL, Forbidden: []string{biz.APISecret}}
	c.Post(t, gqltest.Headers(biz.APIKey, biz.APISecret), `{ payments(first: 1) { nodes { id } } }`, nil).WantNoErrors(t) // accepts the pair
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Each upgrade is anonymous (its credentials come in connection_init):
	// 2 of the burst of 4.
	merchant, err := wsOpen(t, ctx, g.URL, map[string]any{"x-api-key": biz.APIKey, "x-api-secret": biz.APISecret})
	if err != nil {
		t.Fatal(err)
	}
	invented, err := wsOpen(t, ctx, g.URL, map[string]any{"x-api-key": "ak_test_invented", "x-api-secret": "sk_test_invented"})
	if err != nil {
		t.Fatal(err)
	}
	run := func(name string, conn *websocket.Conn, n int) (served, limited int) {
		for i := range n {
			switch r := wsOp(t, ctx, conn, fmt.Sprint(name, i), `{ __typename }`, nil); r.code() {
			case "":
				served++
			case "RATE_LIMITED":
				limited++
			default:
				t.Fatalf("%s's operation %d: %+v", name, i, r)
			}
		}
		return served, limited
	}
	served, limited := run("invented", invented, 20)
	if served > 3 || limited < 17 {
		t.Errorf("invented pair on a WebSocket: %d served, %d RATE_LIMITED of 20; want the anonymous burst's 2 (3 with a refill)", served, limited)
	}
	if served, _ := run("merchant", merchant, 20); served != 20 {
		t.Errorf("accepted merchant on a WebSocket: %d of 20 served", served)
	}
}
