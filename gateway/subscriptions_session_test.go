package gateway_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/coder/websocket/wsjson"

	"paygraph/sandbox"
)

const sessionSub = `subscription($id: String!) { checkoutSessionUpdated(id: $id) { reference paymentStatus payment { id status } } }`

// sessionEvent is one checkoutSessionUpdated event read from an SSE
// stream of the generic client (its data re-read as a session).
type sessionEvent struct {
	CheckoutSessionUpdated *struct {
		Reference, PaymentStatus string
		Payment                  *struct{ ID, Status string }
	} `json:"checkoutSessionUpdated"`
}

// TestSubscriptionSessionToken: a checkout page's session token may
// subscribe to its own session, over a WebSocket whose connection_init
// carries the token, and sees its payment move in the session and in the
// nested payment alike (both polled, not the connection's cached loader);
// the token may not subscribe to another session or payment (FORBIDDEN,
// no REST call).
func TestSubscriptionSessionToken(t *testing.T) {
	env := fastPolls(nil)
	rig := startTokenRig(t, env)
	b := rig.Biz[0]
	var own, other sandbox.CheckoutSession
	var found bool
	for _, s := range rig.Sandbox.CheckoutSessions(b.APIKey) {
		if s.PaymentStatus == "PENDING" && !found {
			own, found = s, true
		} else if s.PaymentID != own.PaymentID {
			other = s
		}
	}
	if !found || other.ID == "" {
		t.Fatal("the sandbox has no PENDING session and another one")
	}
	tok := rig.mustMint(t, b, `{"kind":"checkoutSession","id":"`+own.Reference+`"}`)

	t.Run("refused", func(t *testing.T) {
		for _, tc := range []struct {
			name, query string
			vars        map[string]any
		}{
			{"another session", sessionSub, map[string]any{"id": other.Reference}},
			{"another payment", paymentSub, map[string]any{"id": other.PaymentID}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				rig.Sandbox.ResetCalls()
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				ev := next(t, sseSubscribe(t, ctx, rig.URL, bearer(tok), tc.query, tc.vars))
				if ev.code() != "FORBIDDEN" {
					t.Errorf("event %+v, want FORBIDDEN", ev)
				}
				// The token names its session by reference only: learning
				// its ids costs one GET of the session, no more.
				if n := rig.Sandbox.CallCount(sandbox.RoutePayment); n != 0 {
					t.Errorf("%d payment GETs, want none", n)
				}
			})
		}
	})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := wsDial(t, ctx, rig.URL, map[string]any{"Authorization": "Bearer " + tok})
	if err != nil {
		t.Fatal(err)
	}
	defer w.c.CloseNow()
	raw := make(chan json.RawMessage, 16)
	go func() {
		defer close(raw)
		for {
			var m wsMsg
			if err := readWS(ctx, w, &m); err != nil {
				return
			}
			switch m.Type {
			case "next":
				var p struct{ Data json.RawMessage }
				_ = json.Unmarshal(m.Payload, &p)
				raw <- p.Data
			case "complete", "error":
				raw <- json.RawMessage(`"` + m.Type + `"`)
			}
		}
	}()
	w.subscribe(t, ctx, "s", sessionSub, map[string]any{"id": own.Reference})
	read := func() sessionEvent {
		t.Helper()
		var ev sessionEvent
		select {
		case m := <-raw:
			if err := json.Unmarshal(m, &ev); err != nil || ev.CheckoutSessionUpdated == nil {
				t.Fatalf("event %s, want a session", m)
			}
		case <-ctx.Done():
		}
		return ev
	}
	first := read().CheckoutSessionUpdated
	if first.Reference != own.Reference || first.PaymentStatus != "PENDING" || first.Payment == nil || first.Payment.Status != "PENDING" {
		t.Fatalf("first event %+v", first)
	}
	if err := rig.Sandbox.SetCheckoutSessionStatus(b.APIKey, own.Reference, "SUCCEEDED"); err != nil {
		t.Fatal(err)
	}
	got := read().CheckoutSessionUpdated
	if got.PaymentStatus != "SUCCEEDED" || got.Payment == nil || got.Payment.Status != "SUCCEEDED" {
		t.Fatalf("after SUCCEEDED: %+v (payment %+v), want both SUCCEEDED", got, got.Payment)
	}
}

func readWS(ctx context.Context, w *wsConn, m *wsMsg) error { return wsjson.Read(ctx, w.c, m) }
