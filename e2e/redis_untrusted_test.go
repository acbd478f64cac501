package e2e

// Redis holds untrusted bytes (issue 37, rows 6 and 7): anything that
// reaches the fleet's Redis can write there. Through the binary, on the
// rig of live_replicas_test.go (redis-server, the sandbox behind a poll
// log, gateway replicas with REDIS_URL):
//
//   - TestPoisonedEventStream: a junk entry with a huge id in a watched
//     payment's event stream; the next transitions still reach every
//     subscriber on both replicas, with the fleet's ids, and the payment
//     is polled once per interval for the fleet.
//   - TestTamperedPersistedQuery: another text written straight into
//     Redis under a query's hash is refused (PERSISTED_QUERY_NOT_FOUND)
//     and never run; the client's resend registers the right text again.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"paygraph/internal/gqltest"
)

func redisClient(t *testing.T, url string) *redis.Client {
	t.Helper()
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// skippedOf sums paygraph_redis_skipped_total{read} over the replicas.
func skippedOf(rs []*replica, read string) float64 {
	total := 0.0
	for _, r := range rs {
		v, _ := metricValue(r.Metrics(), `paygraph_redis_skipped_total{read="`+read+`"}`)
		total += v
	}
	return total
}

func TestPoisonedEventStream(t *testing.T) {
	f := startLiveFleet(t, 2)
	id := f.pending(t, 1)[0]
	rdb := redisClient(t, f.redisURL)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// Two subscribers on each replica.
	var subs []<-chan liveEv
	for i := range 4 {
		subs = append(subs, sse(t, ctx, f.replicas[i%2], f.biz, id, ""))
	}
	var first uint64
	for i, c := range subs {
		ev := nextLive(t, c, "PENDING on subscriber "+strconv.Itoa(i))
		n, _ := strconv.ParseUint(ev.eventID, 10, 64)
		if ev.status != "PENDING" || (first != 0 && n != first) {
			t.Fatalf("subscriber %d: %+v", i, ev)
		}
		first = n
	}
	keys, err := rdb.Keys(ctx, "paygraph:live:*:events").Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("event streams: %v %v", keys, err)
	}
	if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: keys[0], ID: "0-99999999999999",
		Values: []any{"f", "junk", "p", "junk", "d", "junk"}}).Err(); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	f.set(t, id, "SUCCEEDED")
	for i, c := range subs {
		if ev := nextLive(t, c, "SUCCEEDED on subscriber "+strconv.Itoa(i)); ev.status != "SUCCEEDED" || ev.eventID != strconv.FormatUint(first+1, 10) {
			t.Fatalf("subscriber %d (replica %s): %+v, want SUCCEEDED %d", i, f.replicas[i%2].name, ev, first+1)
		}
	}
	time.Sleep(8 * livePollInterval) // the polls of an unchanged payment
	f.set(t, id, "REFUNDED")
	for i, c := range subs {
		if ev := nextLive(t, c, "REFUNDED on subscriber "+strconv.Itoa(i)); ev.status != "REFUNDED" || ev.eventID != strconv.FormatUint(first+2, 10) {
			t.Fatalf("subscriber %d (replica %s): %+v, want REFUNDED %d", i, f.replicas[i%2].name, ev, first+2)
		}
		if ev := nextLive(t, c, "complete on subscriber "+strconv.Itoa(i)); !ev.done {
			t.Fatalf("subscriber %d: %+v, want complete", i, ev)
		}
	}
	elapsed := time.Since(start)
	polls := 0
	for _, p := range f.log.of(id) {
		if p.After(start) {
			polls++
		}
	}
	most := int(elapsed/(9*livePollInterval/10)) + 2
	if polls > most {
		t.Errorf("%d REST polls of the payment in %v after the junk entry: one poller for the fleet makes at most %d", polls, elapsed.Round(time.Millisecond), most)
	}
	checkOnePoller(t, f.log, []string{id}, start)
	skipped := skippedOf(f.replicas, "stream")
	if skipped == 0 {
		t.Error(`paygraph_redis_skipped_total{read="stream"} is 0 on both replicas`)
	}
	t.Logf("after a junk entry 0-99999999999999: SUCCEEDED and REFUNDED reached 4 of 4 subscribers on 2 replicas; %d REST polls in %v (interval %v, at most %d); %v stream entries skipped",
		polls, elapsed.Round(time.Millisecond), livePollInterval, most, skipped)
}

func TestTamperedPersistedQuery(t *testing.T) {
	t.Parallel()
	f := startLiveFleet(t, 2)
	rdb := redisClient(t, f.redisURL)
	a, b := f.replicas[0], f.replicas[1]
	h := gqltest.Headers(f.biz.APIKey, f.biz.APISecret)
	ctx := context.Background()

	const honest = `query Honest { __typename }`
	// What the tampered key would run: the first payment's REST detail
	// call, which the poll log sees.
	id := f.pending(t, 1)[0]
	evil := `query Evil { payment(id: "` + id + `") { id status } }`
	sum := sha256.Sum256([]byte(honest))
	if err := rdb.Set(ctx, "paygraph:apq:"+hex.EncodeToString(sum[:]), evil, time.Hour).Err(); err != nil {
		t.Fatal(err)
	}

	for _, r := range []*replica{a, b} {
		got := r.apq(t, h, "", honest, nil)
		got.WantCode(t, "PERSISTED_QUERY_NOT_FOUND")
		if strings.Contains(string(got.Data), id) {
			t.Fatalf("replica %s ran the tampered text: %s", r.name, got.Data)
		}
	}
	if n := len(f.log.of(id)); n != 0 {
		t.Fatalf("the tampered text made %d REST calls for %s", n, id)
	}
	// The client's resend (query and hash) registers the right text; by
	// hash alone both replicas then run it.
	a.apq(t, h, honest, honest, nil).WantNoErrors(t)
	for _, r := range []*replica{a, b} {
		got := r.apq(t, h, "", honest, nil)
		got.WantNoErrors(t)
		if !strings.Contains(string(got.Data), `"__typename":"Query"`) {
			t.Fatalf("replica %s by hash: %s", r.name, got.Data)
		}
	}
	if n := len(f.log.of(id)); n != 0 {
		t.Fatalf("the tampered text made %d REST calls for %s", n, id)
	}
	skipped := skippedOf(f.replicas, "apq")
	if skipped < 2 {
		t.Errorf(`paygraph_redis_skipped_total{read="apq"} is %v over both replicas, want 2`, skipped)
	}
	t.Logf("a text written into Redis under another query's hash: refused on 2 of 2 replicas (PERSISTED_QUERY_NOT_FOUND), 0 REST calls; %v counted", skipped)
}
