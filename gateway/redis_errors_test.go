package gateway_test

import (
	"net"
	"net/http"
	"testing"
)

// TestRedisErrorsCounted: with Redis out of reach, each store that falls
// back to the replica's memory counts its failures under
// paygraph_redis_errors_total by store, which PaygraphRedisFallback
// watches (before, only the rate limits' fallbacks had a metric).
func TestRedisErrorsCounted(t *testing.T) {
	// A port nothing listens on: every Redis operation fails at once.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	g := startGateway(t, setup{env: map[string]string{"REDIS_URL": "redis://" + addr, "REST_UNACCEPTED_CALLS_PER_SECOND": "10"}})
	biz := g.Biz[0]
	h := http.Header{"X-Api-Key": {biz.APIKey}, "X-Api-Secret": {biz.APISecret}}
	g.Post(t, h, `{ payments(first: 1) { nodes { id } } }`, nil)
	series, raw := scrape(t, g)
	for _, store := range []string{"apq", "accepted"} {
		if series[`paygraph_redis_errors_total{store="`+store+`"}`] < 1 {
			t.Errorf("no Redis error counted for %s:\n%s", store, raw)
		}
	}
	for _, store := range []string{"lease", "stream"} {
		if _, ok := series[`paygraph_redis_errors_total{store="`+store+`"}`]; !ok {
			t.Errorf("%s's series is not exported at 0 before its first error", store)
		}
	}
}
