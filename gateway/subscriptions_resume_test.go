package gateway_test

// Resuming a live stream: each state event carries its event id
// (extensions.eventId, and the SSE id: field); a client that reconnects
// with the last one it handled (Last-Event-ID over SSE, lastEventId over
// either transport) gets each transition it missed once, in order, then
// the live ones; an id the gateway does not keep is EVENT_ID_EXPIRED.

import (
	"context"
	"net/http"
	"strconv"
	"testing"
)

const paymentSubAfter = `subscription($id: ID!, $after: String) { paymentUpdated(id: $id, lastEventId: $after) { id status } }`

func TestSubscriptionResume(t *testing.T) {
	t.Parallel()
	g := startGateway(t, setup{env: fastPolls(nil)})
	b := g.Biz[0]
	id := pendingPayment(t, g.Sandbox, b, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// A watcher that stays: the gateway observes what happens while the
	// client below is cut.
	watcher := sseSubscribe(t, ctx, g.URL, creds(b), paymentSub, map[string]any{"id": id})
	first := next(t, watcher)

	cutCtx, cut := context.WithCancel(ctx)
	client := sseSubscribe(t, cutCtx, g.URL, creds(b), paymentSub, map[string]any{"id": id})
	ev := next(t, client)
	t.Run("each state event carries its id, also as the SSE id", func(t *testing.T) {
		if ev.status() != "PENDING" || ev.Extensions.EventID == "" || ev.sseID != ev.Extensions.EventID || ev.Extensions.EventID != first.Extensions.EventID {
			t.Fatalf("first event %+v (watcher's id %q)", ev, first.Extensions.EventID)
		}
	})
	last := ev.Extensions.EventID
	cut()

	if err := g.Sandbox.SetPaymentStatus(b.APIKey, id, "SUCCEEDED"); err != nil {
		t.Fatal(err)
	}
	succeeded := next(t, watcher)
	if succeeded.status() != "SUCCEEDED" {
		t.Fatalf("watcher: %+v", succeeded)
	}
	t.Run("ids of one resource increase by one per transition", func(t *testing.T) {
		a, _ := strconv.ParseUint(last, 10, 64)
		b, _ := strconv.ParseUint(succeeded.Extensions.EventID, 10, 64)
		if b != a+1 {
			t.Fatalf("ids %d then %d", a, b)
		}
	})

	t.Run("SSE: Last-Event-ID gets the missed transition, then the live ones", func(t *testing.T) {
		h := creds(b)
		h.Set("Last-Event-ID", last)
		resumed := sseSubscribe(t, ctx, g.URL, h, paymentSub, map[string]any{"id": id})
		if ev := next(t, resumed); ev.status() != "SUCCEEDED" || ev.Extensions.EventID != succeeded.Extensions.EventID {
			t.Fatalf("resumed with %+v, want SUCCEEDED %s", ev, succeeded.Extensions.EventID)
		}
		if err := g.Sandbox.SetPaymentStatus(b.APIKey, id, "REFUNDED"); err != nil {
			t.Fatal(err)
		}
		if ev := next(t, resumed); ev.status() != "REFUNDED" {
			t.Fatalf("then %+v, want REFUNDED", ev)
		}
		if ev := next(t, resumed); !ev.done {
			t.Fatalf("then %+v, want complete", ev)
		}
	})

	t.Run("WebSocket: lastEventId, from the kept transitions after the stream ended", func(t *testing.T) {
		w, err := wsDial(t, ctx, g.URL, map[string]any{"x-api-key": b.APIKey, "x-api-secret": b.APISecret})
		if err != nil {
			t.Fatal(err)
		}
		defer w.c.CloseNow()
		subs := map[string]chan liveEvent{"1": make(chan liveEvent, 16)}
		w.run(t, ctx, subs)
		w.subscribe(t, ctx, "1", paymentSubAfter, map[string]any{"id": id, "after": last})
		var got []string
		for {
			ev := next(t, subs["1"])
			if ev.done {
				break
			}
			got = append(got, ev.status()+"/"+ev.Extensions.EventID)
		}
		a, _ := strconv.ParseUint(last, 10, 64)
		want := []string{"SUCCEEDED/" + strconv.FormatUint(a+1, 10), "REFUNDED/" + strconv.FormatUint(a+2, 10)}
		if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
			t.Fatalf("got %v, want %v", got, want)
		}
	})

	for _, tt := range []struct {
		name, after, code string
	}{
		{"an id the gateway does not keep", "1", "EVENT_ID_EXPIRED"},
		{"not an event id", "abc", "BAD_USER_INPUT"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range creds(b) {
				h[k] = v
			}
			h.Set("Last-Event-ID", tt.after)
			evs := sseSubscribe(t, ctx, g.URL, h, paymentSub, map[string]any{"id": id})
			if ev := next(t, evs); ev.code() != tt.code {
				t.Fatalf("got %+v, want %s", ev, tt.code)
			}
		})
	}
}
