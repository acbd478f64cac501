package gateway_test

import (
	"context"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/coder/websocket"

	"paygraph/sandbox"
)

// BenchmarkSubscriptions1000Over10 runs the mix through the whole
// gateway: 1,000 subscriptions over 10 PENDING payments of one merchant,
// multiplexed on one graphql-transport-ws connection (so that the client
// side holds little per subscription), and reports
//
//	B/sub:           heap and stacks the process holds per idle subscription
//	                 (gqlgen's operation, the resolver's relay, the hub's
//	                 subscription; the client's share is a map entry);
//	REST_calls/min:  sandbox GETs of a payment during one minute of
//	                 polling, scaled: the interval is 20 ms instead of 2 s
//	                 and the window 600 ms instead of 60 s (the backoff and
//	                 jitter scale with the interval), so the count is what
//	                 a minute at the default costs.
func BenchmarkSubscriptions1000Over10(b *testing.B) {
	const subs, payments = 1000, 10
	var bytesPerSub, callsPerMin, goroutines float64
	n := 0
	for b.Loop() {
		b.StopTimer()
		bs, calls, gs := subscriptionsMix(b, subs, payments)
		bytesPerSub += bs
		goroutines += gs
		callsPerMin += calls
		n++
		b.StartTimer()
	}
	b.ReportMetric(bytesPerSub/float64(n), "B/sub")
	b.ReportMetric(callsPerMin/float64(n), "REST_calls/min")
	b.ReportMetric(goroutines/float64(n), "goroutines/sub")
}

func subscriptionsMix(b *testing.B, subs, payments int) (bytesPerSub, callsPerMin, goroutinesPerSub float64) {
	env := unlimited(nil)
	env["SUBSCRIPTION_POLL_INTERVAL"] = "20ms"
	env["Config.Subscriptions.MaxPerMerchant"] = strconv.Itoa(subs)
	g := startGateway(b, setup{env: env})
	biz := g.Biz[0]
	var ids []string
	for _, p := range g.Sandbox.Payments(biz.APIKey) {
		if p.Status == "PENDING" && len(ids) < payments {
			ids = append(ids, p.ID)
		}
	}
	if len(ids) < payments {
		b.Fatalf("only %d PENDING payments", len(ids))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	t := &testing.T{}
	w, err := wsDial(t, ctx, g.URL, map[string]any{"x-api-key": biz.APIKey, "x-api-secret": biz.APISecret})
	if err != nil {
		b.Fatal(err)
	}
	defer w.c.CloseNow()
	chans := make(map[string]chan liveEvent, subs)
	for i := range subs {
		chans[strconv.Itoa(i)] = make(chan liveEvent, 4)
	}
	w.run(t, ctx, chans)

	before, gBefore := memInUse(), runtime.NumGoroutine()
	g.Sandbox.ResetCalls()
	start := time.Now()
	for i := range subs {
		w.subscribe(t, ctx, strconv.Itoa(i), paymentSub, map[string]any{"id": ids[i%payments]})
	}
	for i := range subs {
		select {
		case <-chans[strconv.Itoa(i)]:
		case <-time.After(30 * time.Second):
			b.Fatalf("subscription %d: no first event", i)
		}
	}
	after, gAfter := memInUse(), runtime.NumGoroutine()
	time.Sleep(600*time.Millisecond - time.Since(start))
	calls := g.Sandbox.CallCount(sandbox.RoutePayment)
	w.c.Close(websocket.StatusNormalClosure, "")
	return float64(after-before) / float64(subs), float64(calls), float64(gAfter-gBefore) / float64(subs)
}

func memInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}
