package gateway_test

import (
	"testing"
	"time"
)

// BenchmarkJoinListWithAddresses20ms: with every REST call taking 20 ms, a
// 50-item list with customer.address costs 1 list call + 50 detail calls;
// the loaders run the 50 concurrently, so a query takes about two round
// trips (~40 ms plus the gateway's own time), not 51 (~1 s).
//
//	go test -run '^$' -bench JoinListWithAddresses20ms -benchtime 20x .
//
// With the default per-request bound of 16 the 50 details go in
// ⌈50/16⌉ = 4 waves: 5 round trips in all. Both are measured.
func BenchmarkJoinListWithAddresses20ms(b *testing.B) {
	for _, conc := range []string{"64", "16"} {
		b.Run("REST_MAX_CONCURRENCY="+conc, func(b *testing.B) {
			g := startGateway(b, setup{env: unlimited(map[string]string{"REST_MAX_CONCURRENCY": conc})})
			g.Sandbox.SetLatency(20 * time.Millisecond)
			h := creds(g.Biz[0])
			const q = `{ payments(first: 50) { nodes { id customer { address } } } }`
			for b.Loop() {
				r := g.Post(b, h, q, nil)
				if len(r.Errors) > 0 {
					b.Fatal(r.Errors)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(g.Sandbox.CallCount(""))/float64(b.N), "REST-calls/op")
		})
	}
}
