package ratelimit

import (
	"context"
	"testing"
	"time"
)

// TestAllowRESTCallsChargesNoRequest: the edge charges a request with
// Allow(ctx, m, 0), the operation's estimate is charged afterwards with
// AllowRESTCalls; together they spend one request and the estimate, as one
// Allow(ctx, m, n) would.
func TestAllowRESTCallsChargesNoRequest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := Config{RequestsPerSecond: 1, RequestsBurst: 2, RESTCallsPerSecond: 10, RESTBurst: 10}

	t.Run("the estimate spends REST calls only", func(t *testing.T) {
		l, _ := newTestLimiter(t, cfg)
		check(t, "edge", l.Allow(ctx, "m", 0), want{true, 1, 0, PolicyRequests})
		check(t, "estimate", l.AllowRESTCalls(ctx, "m", 4), want{true, 6, 0, PolicyRESTCalls})
		check(t, "estimate again", l.AllowRESTCalls(ctx, "m", 4), want{true, 2, 0, PolicyRESTCalls})
		// Two estimates charged no request: the second edge charge is the
		// second request of the burst of 2.
		check(t, "edge again", l.Allow(ctx, "m", 0), want{true, 0, 0, PolicyRequests})
		check(t, "over the REST budget", l.AllowRESTCalls(ctx, "m", 4), want{false, 0, 200 * time.Millisecond, PolicyRESTCalls})
	})

	t.Run("nothing to charge: allowed, no decision", func(t *testing.T) {
		var outcomes []string
		c := cfg
		c.OnDecision = func(o string) { outcomes = append(outcomes, o) }
		l, _ := newTestLimiter(t, c)
		if d := l.AllowRESTCalls(ctx, "m", 0); !d.Allowed || d.Policy != "" {
			t.Fatalf("zero REST calls: %+v", d)
		}
		noREST, _ := newTestLimiter(t, Config{RequestsPerSecond: 1, RequestsBurst: 1, OnDecision: c.OnDecision})
		if d := noREST.AllowRESTCalls(ctx, "m", 50); !d.Allowed || d.Policy != "" {
			t.Fatalf("no REST-calls limit: %+v", d)
		}
		if len(outcomes) != 0 {
			t.Fatalf("OnDecision called for nothing charged: %v", outcomes)
		}
	})

	t.Run("over the burst is TooCostly", func(t *testing.T) {
		l, _ := newTestLimiter(t, cfg)
		if d := l.AllowRESTCalls(ctx, "m", 11); d.Allowed || !d.TooCostly {
			t.Fatalf("11 over a burst of 10: %+v", d)
		}
	})
}
