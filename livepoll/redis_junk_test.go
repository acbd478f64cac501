package livepoll

// What anything that reaches the fleet's Redis may write there: junk
// entries in a watched resource's event stream (a later id than any
// transition, fields RedisStore never writes, a genuine entry replayed
// under another id or phase) and a lease no replica took. Each is
// skipped and counted; the next transitions still reach every
// subscriber of both replicas, and the resource is polled once per
// interval for the fleet.

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

type skipCount struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *skipCount) count(what string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[what] += n
}

func (c *skipCount) of(what string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[what]
}

// nextWithin receives one event within d (a hang guard, not a timing).
func nextWithin(t *testing.T, s *Subscription, d time.Duration, what string) Event {
	t.Helper()
	select {
	case ev, ok := <-s.Events():
		if !ok {
			t.Fatalf("%s: the subscription ended (%v)", what, s.Err())
		}
		return ev
	case <-time.After(d):
		t.Fatalf("%s: no event in %v", what, d)
	}
	return Event{}
}

func TestRedisStoreJunk(t *testing.T) {
	t.Parallel()
	rdb := startRedis(t)
	const interval = 100 * time.Millisecond
	ctx := context.Background()

	// Each case writes its junk into the stream of k (whose first
	// transition, PENDING, has id first) or its lease.
	cases := []struct {
		name   string
		stream bool // the junk is a stream entry (else the lease)
		write  func(t *testing.T, lease, events string, first uint64)
	}{
		{"an entry with a huge id and junk fields", true, func(t *testing.T, _, events string, _ uint64) {
			xadd(t, rdb, events, "0-99999999999999", "f", "junk", "p", "junk", "d", "junk")
		}},
		{"an entry past every 0-N id", true, func(t *testing.T, _, events string, _ uint64) {
			xadd(t, rdb, events, "1-0", "x", "1")
		}},
		{"a well-formed entry that does not open", true, func(t *testing.T, _, events string, first uint64) {
			xadd(t, rdb, events, "0-"+strconv.FormatUint(first+1, 10), "f", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "p", "2", "d", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
		}},
		{"the first entry replayed as the next id, final", true, func(t *testing.T, _, events string, first uint64) {
			m, err := rdb.XRange(ctx, events, "-", "+").Result()
			if err != nil || len(m) != 1 {
				t.Fatalf("stream: %v %v", m, err)
			}
			xadd(t, rdb, events, "0-"+strconv.FormatUint(first+1, 10), "f", m[0].Values["f"], "p", "2", "d", m[0].Values["d"])
		}},
		{"a lease with no expiry", false, func(t *testing.T, lease, _ string, _ uint64) {
			if err := rdb.Set(ctx, lease, "junk", 0).Err(); err != nil {
				t.Fatal(err)
			}
		}},
		{"a lease value no replica writes, long-lived", false, func(t *testing.T, lease, _ string, _ uint64) {
			if err := rdb.Set(ctx, lease, "0123456789abcdef01234567", time.Hour).Err(); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			k := Key{Merchant: "m_junk", Kind: "payment", ID: "pay_junk_" + strconv.Itoa(i)}
			lease, events := redisKeys(k)
			res := &resource{state: "PENDING"}
			skipped := &skipCount{n: map[string]int{}}
			if !tc.stream {
				tc.write(t, lease, events, 0) // before anyone takes the lease
			}
			var subs []*Subscription
			for range 2 {
				st := NewRedisStore(rdb, 0).Sealed(testAEAD(t, 1)).CountingSkipped(skipped.count)
				h, err := New(Config{Interval: interval, MaxInterval: interval, Store: st, Decode: decodeString})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(h.Close)
				s, err := h.Subscribe(ctx, k, res.fetch)
				if err != nil {
					t.Fatal(err)
				}
				subs = append(subs, s)
			}
			var first uint64
			for j, s := range subs {
				ev := nextWithin(t, s, 3*time.Second, "PENDING on replica "+strconv.Itoa(j))
				if ev.Snapshot.Value != "PENDING" || (first != 0 && ev.ID != first) {
					t.Fatalf("replica %d: %+v, want PENDING (id %d)", j, ev, first)
				}
				first = ev.ID
			}
			if tc.stream {
				tc.write(t, lease, events, first)
			}

			start, before := time.Now(), res.calls.Load()
			res.set("SUCCEEDED")
			for j, s := range subs {
				if ev := nextWithin(t, s, 3*time.Second, "SUCCEEDED on replica "+strconv.Itoa(j)); ev.Snapshot.Value != "SUCCEEDED" || ev.ID != first+1 {
					t.Fatalf("replica %d: %+v, want SUCCEEDED %d", j, ev, first+1)
				}
			}
			time.Sleep(6 * interval) // the polls of an unchanged resource
			res.set("REFUNDED")
			for j, s := range subs {
				if ev := nextWithin(t, s, 3*time.Second, "REFUNDED on replica "+strconv.Itoa(j)); ev.Snapshot.Value != "REFUNDED" || ev.ID != first+2 {
					t.Fatalf("replica %d: %+v, want REFUNDED %d", j, ev, first+2)
				}
			}
			elapsed, polls := time.Since(start), res.calls.Load()-before
			if most := int64(elapsed/(9*interval/10)) + 2; polls > most {
				t.Errorf("%d polls in %v: one poller for the fleet polls at most %d", polls, elapsed.Round(time.Millisecond), most)
			}
			what := SkippedLease
			if tc.stream {
				what = SkippedStream
			}
			if skipped.of(what) == 0 {
				t.Errorf("nothing counted as a skipped %s: %v", what, skipped.n)
			}
			t.Logf("%d polls in %v after the junk; skipped %v", polls, elapsed.Round(time.Millisecond), skipped.n)
		})
	}
}

func xadd(t *testing.T, rdb *redis.Client, stream, id string, values ...any) {
	t.Helper()
	if err := rdb.XAdd(context.Background(), &redis.XAddArgs{Stream: stream, ID: id, Values: values}).Err(); err != nil {
		t.Fatal(err)
	}
}
