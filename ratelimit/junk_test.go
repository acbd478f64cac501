package ratelimit

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestRedisJunkBudget: a budget written straight into Redis that
// redis_rate could not have written (not a number; a theoretical arrival
// time years ahead, with no expiry) neither refuses its merchant for good
// nor sends the fleet to its local budgets: it is counted, reset, and the
// merchant's charge is decided in Redis from a full budget; another
// merchant's next charge is still decided in Redis.
func TestRedisJunkBudget(t *testing.T) {
	t.Parallel()
	srv := startRedis(t)
	ctx := context.Background()
	raw := client(t, srv.addr)
	cases := []struct{ name, value string }{
		{"not a number", "junk"},
		{"an arrival time years ahead", "1e12"},
		{"a hash, not a string", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var junk atomic.Int64
			l := newRedisLimiter(t, Config{RESTCallsPerSecond: 10, RESTBurst: 20, Redis: client(t, srv.addr), RedisTimeout: upRedisTimeout, OnJunk: func() { junk.Add(1) }})
			merchant := "m_junk_" + tc.name
			key := "rate:" + keyPrefix + PolicyRESTCalls + ":" + merchant
			var err error
			if tc.value == "" {
				err = raw.HSet(ctx, key, "tat", "1").Err()
			} else {
				err = raw.Set(ctx, key, tc.value, 0).Err()
			}
			if err != nil {
				t.Fatal(err)
			}
			d := l.Allow(ctx, merchant, 1)
			if !d.Allowed || d.Backend != BackendRedis || d.Remaining < 18 {
				t.Errorf("the merchant's charge: %+v, want allowed in Redis with 19 left (18: redis_rate's rounding)", d)
			}
			if d := l.Allow(ctx, "m_other_"+tc.name, 1); d.Backend != BackendRedis {
				t.Errorf("another merchant's charge decided by %q: the junk started a backoff", d.Backend)
			}
			if n := junk.Load(); n != 1 {
				t.Errorf("%d junk budgets counted, want 1", n)
			}
			if ttl := raw.TTL(ctx, key).Val(); ttl <= 0 || ttl > 3*time.Second {
				t.Errorf("the budget's TTL after the reset: %v", ttl)
			}
		})
	}
}
