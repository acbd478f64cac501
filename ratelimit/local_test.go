package ratelimit

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"paygraph/internal/testenv"
)

// fakeClock drives the local budgets, so that no test depends on how fast
// the machine is.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// newTestLimiter returns a Limiter whose local budgets run on a fake clock.
func newTestLimiter(t *testing.T, cfg Config) (*Limiter, *fakeClock) {
	t.Helper()
	l, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	clk := &fakeClock{t: time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)}
	l.local = newLocalStore(l.local.max, clk.Now)
	return l, clk
}

// want is the part of a Decision a case checks.
type want struct {
	allowed    bool
	remaining  int
	retryAfter time.Duration
	policy     string
}

func check(t *testing.T, step string, d Decision, w want) {
	t.Helper()
	if d.Allowed != w.allowed || d.Remaining != w.remaining || d.RetryAfter != w.retryAfter || d.Policy != w.policy {
		t.Fatalf("%s: got allowed=%v remaining=%d retryAfter=%v policy=%q; want allowed=%v remaining=%d retryAfter=%v policy=%q",
			step, d.Allowed, d.Remaining, d.RetryAfter, d.Policy, w.allowed, w.remaining, w.retryAfter, w.policy)
	}
	if d.Backend != BackendLocal {
		t.Fatalf("%s: backend %q, want local", step, d.Backend)
	}
}

func TestLocalBurstAndRetryAfter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("requests burst then refusal with the exact wait", func(t *testing.T) {
		l, clk := newTestLimiter(t, Config{RequestsPerSecond: 10, RequestsBurst: 5})
		for i := range 5 {
			check(t, fmt.Sprintf("request %d", i+1), l.Allow(ctx, "m", 0), want{true, 4 - i, 0, PolicyRequests})
		}
		check(t, "6th", l.Allow(ctx, "m", 0), want{false, 0, 100 * time.Millisecond, PolicyRequests})
		clk.Advance(99 * time.Millisecond)
		check(t, "after 99ms", l.Allow(ctx, "m", 0), want{false, 0, time.Millisecond, PolicyRequests})
		clk.Advance(time.Millisecond)
		check(t, "after 100ms", l.Allow(ctx, "m", 0), want{true, 0, 0, PolicyRequests})
	})

	t.Run("REST calls are charged by cost", func(t *testing.T) {
		l, clk := newTestLimiter(t, Config{RESTCallsPerSecond: 10, RESTBurst: 10})
		for i, rem := range []int{7, 4, 1} {
			check(t, fmt.Sprintf("call %d", i+1), l.Allow(ctx, "m", 3), want{true, rem, 0, PolicyRESTCalls})
		}
		d := l.Allow(ctx, "m", 3)
		// 9 of 10 spent, 3 more need 2 refilled at 100 ms each.
		check(t, "4th", d, want{false, 0, 200 * time.Millisecond, PolicyRESTCalls})
		if d.Reset != 900*time.Millisecond {
			t.Fatalf("Reset %v, want 900ms (9 units at 100ms)", d.Reset)
		}
		clk.Advance(200 * time.Millisecond)
		check(t, "after the wait", l.Allow(ctx, "m", 3), want{true, 0, 0, PolicyRESTCalls})
	})

	t.Run("more than the burst is TooCostly and spends nothing", func(t *testing.T) {
		l, _ := newTestLimiter(t, Config{RESTCallsPerSecond: 10, RESTBurst: 10})
		d := l.Allow(ctx, "m", 11)
		if d.Allowed || !d.TooCostly || d.RetryAfter != 0 || d.RetryAfterSeconds() != 0 {
			t.Fatalf("cost 11 over burst 10: %+v", d)
		}
		check(t, "a full burst after it", l.Allow(ctx, "m", 10), want{true, 0, 0, PolicyRESTCalls})
	})

	t.Run("a request refused on requests spends no REST calls", func(t *testing.T) {
		l, clk := newTestLimiter(t, Config{RequestsPerSecond: 1, RequestsBurst: 1, RESTCallsPerSecond: 1, RESTBurst: 10})
		if d := l.Allow(ctx, "m", 5); !d.Allowed {
			t.Fatalf("first: %+v", d)
		}
		check(t, "second", l.Allow(ctx, "m", 5), want{false, 0, time.Second, PolicyRequests})
		clk.Advance(time.Second)
		// Had the refused request spent 5 REST calls, 1 s of refill could not pay for 5 more.
		if d := l.Allow(ctx, "m", 5); !d.Allowed {
			t.Fatalf("third: %+v: the refused request spent REST calls", d)
		}
	})

	t.Run("a request refused on REST calls still counts as a request", func(t *testing.T) {
		l, _ := newTestLimiter(t, Config{RequestsPerSecond: 1, RequestsBurst: 2, RESTCallsPerSecond: 1, RESTBurst: 10})
		if d := l.Allow(ctx, "m", 10); !d.Allowed {
			t.Fatalf("first: %+v", d)
		}
		check(t, "second", l.Allow(ctx, "m", 10), want{false, 0, 10 * time.Second, PolicyRESTCalls})
		check(t, "third, free", l.Allow(ctx, "m", 0), want{false, 0, time.Second, PolicyRequests})
	})

	t.Run("merchants are independent", func(t *testing.T) {
		l, _ := newTestLimiter(t, Config{RESTCallsPerSecond: 1, RESTBurst: 5})
		check(t, "a spends all", l.Allow(ctx, "a", 5), want{true, 0, 0, PolicyRESTCalls})
		check(t, "a refused", l.Allow(ctx, "a", 1), want{false, 0, time.Second, PolicyRESTCalls})
		check(t, "b untouched", l.Allow(ctx, "b", 5), want{true, 0, 0, PolicyRESTCalls})
	})

	t.Run("the tighter budget names an allowed decision", func(t *testing.T) {
		l, _ := newTestLimiter(t, Config{RequestsPerSecond: 10, RequestsBurst: 10, RESTCallsPerSecond: 100, RESTBurst: 100})
		check(t, "cost 1", l.Allow(ctx, "m", 1), want{true, 9, 0, PolicyRequests})     // 9/10 < 99/100
		check(t, "cost 50", l.Allow(ctx, "m", 50), want{true, 49, 0, PolicyRESTCalls}) // 49/100 < 8/10
	})

	t.Run("no limit set", func(t *testing.T) {
		l, _ := newTestLimiter(t, Config{})
		for range 1000 {
			if d := l.Allow(ctx, "m", 500); !d.Allowed || d.Policy != "" || d.Backend != "" {
				t.Fatalf("%+v", d)
			}
		}
	})

	t.Run("only a REST-calls limit and a request that makes no REST call", func(t *testing.T) {
		l, _ := newTestLimiter(t, Config{RESTCallsPerSecond: 1, RESTBurst: 1})
		for range 10 {
			if d := l.Allow(ctx, "m", 0); !d.Allowed || d.Policy != "" {
				t.Fatalf("%+v", d)
			}
		}
		check(t, "then one call", l.Allow(ctx, "m", 1), want{true, 0, 0, PolicyRESTCalls})
	})

	t.Run("the defaults admit a 100-item joined list and a MAX_COMPLEXITY operation", func(t *testing.T) {
		l, _ := newTestLimiter(t, DefaultConfig())
		if d := l.Allow(ctx, "m", 500); !d.Allowed {
			t.Fatalf("MAX_COMPLEXITY 500: %+v", d)
		}
		for i := range 4 {
			if d := l.Allow(ctx, "m", 101); !d.Allowed {
				t.Fatalf("joined list %d: %+v", i+1, d)
			}
		}
		// 904 of 1000 spent: 101 more need 5 refilled at 5 ms each.
		check(t, "over the burst", l.Allow(ctx, "m", 101), want{false, 0, 25 * time.Millisecond, PolicyRESTCalls})
	})
}

func TestHeaders(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	policy := `"requests";q=400;w=2, "rest-calls";q=1000;w=5;paygraph-unit="rest-calls"`
	cases := []struct {
		name string
		cfg  Config
		cost []int // the last one's decision is checked
		want map[string]string
	}{
		{
			name: "allowed: the tighter budget, no Retry-After",
			cfg:  DefaultConfig(), cost: []int{101},
			want: map[string]string{"RateLimit-Policy": policy, "RateLimit": `"rest-calls";r=899;t=1`, "Retry-After": ""},
		},
		{
			name: "refused: r=0, t and Retry-After the rounded-up wait",
			cfg:  DefaultConfig(), cost: []int{500, 500, 101},
			want: map[string]string{"RateLimit-Policy": policy, "RateLimit": `"rest-calls";r=0;t=1`, "Retry-After": "1"},
		},
		{
			name: "refused for seconds",
			cfg:  Config{RESTCallsPerSecond: 2, RESTBurst: 10}, cost: []int{10, 5},
			want: map[string]string{"RateLimit-Policy": `"rest-calls";q=10;w=5;paygraph-unit="rest-calls"`, "RateLimit": `"rest-calls";r=0;t=3`, "Retry-After": "3"},
		},
		{
			name: "too costly: only the policy, no Retry-After",
			cfg:  DefaultConfig(), cost: []int{1001},
			want: map[string]string{"RateLimit-Policy": policy, "RateLimit": "", "Retry-After": ""},
		},
		{
			name: "burst below the rate: a one-second window",
			cfg:  Config{RequestsPerSecond: 50, RequestsBurst: 10}, cost: []int{0},
			want: map[string]string{"RateLimit-Policy": `"requests";q=10;w=1`, "RateLimit": `"requests";r=9;t=1`},
		},
		{
			name: "no limit: no headers",
			cfg:  Config{}, cost: []int{5},
			want: map[string]string{"RateLimit-Policy": "", "RateLimit": "", "Retry-After": ""},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l, _ := newTestLimiter(t, tc.cfg)
			var d Decision
			for _, c := range tc.cost {
				d = l.Allow(ctx, "m", c)
			}
			h := http.Header{}
			d.SetHeaders(h)
			for k, v := range tc.want {
				if got := h.Get(k); got != v {
					t.Errorf("%s: %q, want %q (decision %+v)", k, got, v, d)
				}
			}
		})
	}
}

func TestRetryAfterSeconds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		wait time.Duration
		want int
	}{{time.Nanosecond, 1}, {100 * time.Millisecond, 1}, {time.Second, 1}, {1200 * time.Millisecond, 2}, {0, 1}} {
		t.Run(tc.wait.String(), func(t *testing.T) {
			t.Parallel()
			if got := (Decision{RetryAfter: tc.wait}).RetryAfterSeconds(); got != tc.want {
				t.Fatalf("%v: %d, want %d", tc.wait, got, tc.want)
			}
		})
	}
	if got := (Decision{Allowed: true, RetryAfter: time.Second}).RetryAfterSeconds(); got != 0 {
		t.Fatalf("allowed: %d", got)
	}
}

func TestOnDecisionOutcomes(t *testing.T) {
	ctx := context.Background()
	record := func() (*[]string, func(string)) {
		var mu sync.Mutex
		var got []string
		return &got, func(o string) { mu.Lock(); got = append(got, o); mu.Unlock() }
	}

	t.Run("local", func(t *testing.T) {
		got, f := record()
		l, _ := newTestLimiter(t, Config{RESTCallsPerSecond: 1, RESTBurst: 2, OnDecision: f})
		l.Allow(ctx, "m", 2)
		l.Allow(ctx, "m", 1)
		l.Allow(ctx, "m", 3)
		want := []string{OutcomeAllowed, OutcomeLimited, OutcomeTooCostly}
		if fmt.Sprint(*got) != fmt.Sprint(want) {
			t.Fatalf("outcomes %v, want %v", *got, want)
		}
	})

	t.Run("Redis unreachable: fallback outcomes, no error", func(t *testing.T) {
		got, f := record()
		port := testenv.FreeLoopbackPort(t) // closed again: connection refused
		c := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port), ContextTimeoutEnabled: true, MaxRetries: -1})
		t.Cleanup(func() { _ = c.Close() })
		l, _ := newTestLimiter(t, Config{RESTCallsPerSecond: 1, RESTBurst: 2, OnDecision: f, Redis: c, RedisBackoff: time.Hour})
		if d := l.Allow(ctx, "m", 2); !d.Allowed || d.Backend != BackendLocal {
			t.Fatalf("%+v", d)
		}
		if d := l.Allow(ctx, "m", 1); d.Allowed || d.Backend != BackendLocal || d.RetryAfter != time.Second {
			t.Fatalf("%+v", d)
		}
		want := []string{OutcomeFallbackAllowed, OutcomeFallbackLimited}
		if fmt.Sprint(*got) != fmt.Sprint(want) {
			t.Fatalf("outcomes %v, want %v", *got, want)
		}
		if n := l.RedisErrors(); n != 1 {
			t.Fatalf("RedisErrors %d, want 1 (the second Allow is in the backoff)", n)
		}
	})
}

func TestLocalMemoryBound(t *testing.T) {
	ctx := context.Background()
	cfg := Config{RESTCallsPerSecond: 1, RESTBurst: 10, RequestsPerSecond: 1, RequestsBurst: 10}

	t.Run("the cap holds under many merchants", func(t *testing.T) {
		c := cfg
		c.LocalMaxMerchants = 100
		l, _ := newTestLimiter(t, c)
		for i := range 10000 {
			l.Allow(ctx, fmt.Sprintf("merchant-%d", i), 1)
			if n := l.local.len(); n > 100 {
				t.Fatalf("after %d merchants the store holds %d, cap 100", i+1, n)
			}
		}
	})

	t.Run("idle merchants are dropped first", func(t *testing.T) {
		c := cfg
		c.LocalMaxMerchants = 10
		l, clk := newTestLimiter(t, c)
		for i := range 10 {
			l.Allow(ctx, fmt.Sprintf("m%d", i), 1)
		}
		clk.Advance(time.Second) // every budget is full again
		l.Allow(ctx, "new", 1)
		if n := l.local.len(); n != 1 {
			t.Fatalf("store holds %d, want only the new merchant", n)
		}
	})

	t.Run("a merchant in debt is kept, the ones closest to full go", func(t *testing.T) {
		c := cfg
		c.LocalMaxMerchants = 8
		l, _ := newTestLimiter(t, c)
		l.Allow(ctx, "debtor", 10)
		for i := range 50 {
			l.Allow(ctx, fmt.Sprintf("light-%d", i), 1)
		}
		if d := l.Allow(ctx, "debtor", 1); d.Allowed {
			t.Fatalf("the debtor's entry was evicted: %+v", d)
		}
	})

	t.Run("long merchant keys are hashed", func(t *testing.T) {
		l, _ := newTestLimiter(t, cfg)
		l.Allow(ctx, strings.Repeat("k", 10000), 1)
		l.local.mu.Lock()
		defer l.local.mu.Unlock()
		for k := range l.local.m {
			if len(k) != 64 {
				t.Fatalf("stored key of %d bytes", len(k))
			}
		}
	})

	t.Run("measured bytes per merchant", func(t *testing.T) {
		const n = DefaultLocalMaxMerchants
		l, _ := newTestLimiter(t, cfg)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range n {
			l.Allow(ctx, fmt.Sprintf("%064x", i), 1) // a fresh key of a SHA-256's shape, kept only by the store
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		if got := l.local.len(); got != n {
			t.Fatalf("store holds %d, want %d", got, n)
		}
		per := float64(after.HeapAlloc-before.HeapAlloc) / n
		t.Logf("%d merchants: %.0f bytes each, key included; %.2f MB in all", n, per, per*n/1e6)
		if per > 256 {
			t.Fatalf("%.0f bytes per merchant", per)
		}
	})
}

func TestNewRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"negative rate", Config{RESTCallsPerSecond: -1}},
		{"negative burst", Config{RequestsBurst: -1}},
		{"huge burst", Config{RESTBurst: 2e9}},
		{"negative timeout", Config{RedisTimeout: -time.Second}},
		{"client without ContextTimeoutEnabled", Config{Redis: redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := New(tc.cfg); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}
