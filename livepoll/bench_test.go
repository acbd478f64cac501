package livepoll_test

import (
	"context"
	"net/http/httptest"
	"runtime"
	"strconv"
	"testing"
	"time"

	"paygraph/livepoll"
	"paygraph/sandbox"
)

// BenchmarkIdleMemory measures what idle subscriptions hold in this
// package (heap and goroutine stacks, after a GC): each subscriber has
// read its first state and the pollers sleep. The caller's contexts and
// keys exist before the baseline; a transport's own per-subscription cost
// (a goroutine, a connection) is not included.
//
//	subscription:  10,000 subscribers of one key   -> B/sub
//	poller:        1,000 keys, one subscriber each -> B/key (a poller and a subscription)
//	1000_over_10:  1,000 subscribers over 10 keys  -> B/sub, the mix
func BenchmarkIdleMemory(b *testing.B) {
	for _, bc := range []struct {
		name       string
		keys, subs int
		unit       string
	}{
		{"subscription", 1, 10000, "B/sub"},
		{"poller", 1000, 1000, "B/key"},
		{"1000_over_10", 10, 1000, "B/sub"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var total float64
			n := 0
			for b.Loop() {
				total += idleBytes(b, bc.keys, bc.subs)
				n++
			}
			b.ReportMetric(total/float64(n), bc.unit)
		})
	}
}

func idleBytes(b *testing.B, nKeys, nSubs int) float64 {
	b.StopTimer()
	defer b.StartTimer()
	h, err := livepoll.New(livepoll.Config{Interval: time.Hour, MaxPerMerchant: nSubs, MaxSubscriptions: nSubs})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	snap := livepoll.Snapshot{Value: "state", Fingerprint: "fingerprint"}
	fetch := func(context.Context) (livepoll.Snapshot, error) { return snap, nil }
	keys := make([]livepoll.Key, nKeys)
	for i := range keys {
		keys[i] = livepoll.Key{Merchant: "0123456789abcdef0123456789abcdef", Kind: "payment", ID: "pay_prod_" + strconv.Itoa(1e9+i)}
	}
	ctxs := make([]context.Context, nSubs)
	cancels := make([]context.CancelFunc, nSubs)
	for i := range ctxs {
		ctxs[i], cancels[i] = context.WithCancel(context.Background())
	}
	subs := make([]*livepoll.Subscription, nSubs)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range subs {
		if subs[i], err = h.Subscribe(ctxs[i], keys[i%nKeys], fetch); err != nil {
			b.Fatal(err)
		}
	}
	for _, s := range subs {
		<-s.Events()
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	used := float64(after.HeapAlloc+after.StackInuse) - float64(before.HeapAlloc+before.StackInuse)
	runtime.KeepAlive(subs)
	for _, c := range cancels {
		c()
	}
	return used / float64(nSubs)
}

// BenchmarkRESTCallsThousandOverTen runs the mix against the
// sandbox over HTTP: 1,000 subscribers over 10 payments that do not change,
// at a 10 ms interval with no backoff, for 300 ms. It reports REST calls per
// interval (10 means one per payment, whatever the subscribers) and the REST
// calls per minute this is at the default 2 s interval (× 30) and with the
// backoff at its 8 s ceiling (× 7.5).
func BenchmarkRESTCallsThousandOverTen(b *testing.B) {
	const interval = 10 * time.Millisecond
	for b.Loop() {
		sb := sandbox.New(sandbox.Options{})
		ts := httptest.NewServer(sb)
		e := &env{sb: sb, ts: ts, base: ts.URL, client: ts.Client()}
		biz := sb.Businesses()[0]
		var ids []string
		for _, p := range sb.Payments(biz.APIKey) {
			if p.Status == sandbox.StatusPending && len(ids) < 10 {
				ids = append(ids, p.ID)
			}
		}
		h, err := livepoll.New(livepoll.Config{Interval: interval, MaxInterval: interval, MaxPerMerchant: 1000})
		if err != nil {
			b.Fatal(err)
		}
		for i := range 1000 {
			id := ids[i%len(ids)]
			if _, err := h.Subscribe(context.Background(), livepoll.Key{Merchant: merchantKey(biz), Kind: "payment", ID: id}, e.paymentFetch(biz, id)); err != nil {
				b.Fatal(err)
			}
		}
		sb.ResetCalls()
		start := time.Now()
		time.Sleep(30 * interval)
		calls := sb.CallCount("")
		elapsed := time.Since(start)
		h.Close()
		ts.Close()
		perInterval := float64(calls) / (float64(elapsed) / float64(interval))
		b.ReportMetric(perInterval, "calls/interval")
		b.ReportMetric(perInterval*30, "calls/min@2s")
		b.ReportMetric(perInterval*7.5, "calls/min@8s")
	}
}
