package ratelimit

import (
	"bytes"
	"context"
	"math"
	"net"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"

	"paygraph/internal/testenv"
)

// redisServer is a real redis-server on a free loopback port (the pattern
// of apqstore/redis_test.go).
type redisServer struct {
	bin, addr string
	port      int
	cmd       *exec.Cmd
	once      sync.Once
}

// startRedis starts Debian's redis-server (scripts/ci-setup.sh installs
// it). Without it the test fails under CI and is skipped elsewhere.
func startRedis(t testing.TB) *redisServer {
	t.Helper()
	s := &redisServer{bin: testenv.Tool(t, "redis-server"), port: testenv.FreeLoopbackPort(t)}
	s.addr = "127.0.0.1:" + strconv.Itoa(s.port)
	s.start(t)
	return s
}

// start runs the server on s.port and waits until it answers.
func (s *redisServer) start(t testing.TB) {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.Command(s.bin, "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--protected-mode", "yes", "--dir", t.TempDir())
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.cmd, s.once = cmd, sync.Once{}
	t.Cleanup(s.Stop)
	c := redis.NewClient(&redis.Options{Addr: s.addr})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for c.Ping(context.Background()).Err() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("redis-server did not answer on %s: %s", s.addr, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop kills the server and waits for it.
func (s *redisServer) Stop() {
	s.once.Do(func() {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	})
}

// client is a go-redis client as the gateway would configure one.
func client(t testing.TB, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1, DisableIdentity: true})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// upRedisTimeout is the Redis deadline of the tests whose Redis is up and
// answering: on a loaded machine a new connection's first script can take
// over the default 50 ms, and these tests are about budgets, not about
// falling back (TestRedisSilent is).
const upRedisTimeout = 2 * time.Second

func newRedisLimiter(t *testing.T, cfg Config) *Limiter {
	t.Helper()
	l, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestRedisSharedBudget: two Limiters on one redis-server, as two gateway
// replicas, share one merchant's budget; another merchant is unaffected.
func TestRedisSharedBudget(t *testing.T) {
	srv := startRedis(t)
	ctx := context.Background()
	const rate, burst = 1, 20
	cfg := Config{RESTCallsPerSecond: rate, RESTBurst: burst, RedisTimeout: upRedisTimeout}
	cfgA, cfgB := cfg, cfg
	cfgA.Redis, cfgB.Redis = client(t, srv.addr), client(t, srv.addr)
	a, b := newRedisLimiter(t, cfgA), newRedisLimiter(t, cfgB)

	t.Run("the sum of both replicas stays within one budget", func(t *testing.T) {
		start := time.Now()
		allowed := 0
		var refused Decision
		for i := range 4 * burst {
			l := a
			if i%2 == 1 {
				l = b
			}
			d := l.Allow(ctx, "shared", 1)
			if d.Backend != BackendRedis {
				t.Fatalf("request %d decided by %q, want redis", i, d.Backend)
			}
			if d.Allowed {
				allowed++
			} else {
				refused = d
			}
		}
		// Refill during the loop: rate × elapsed, plus one for the partial unit.
		most := burst + int(math.Ceil(time.Since(start).Seconds()*rate))
		if allowed < burst || allowed > most {
			t.Fatalf("%d of %d allowed across two replicas; want %d..%d", allowed, 4*burst, burst, most)
		}
		if refused.Allowed || refused.Policy != PolicyRESTCalls || refused.RetryAfter <= 0 || refused.RetryAfter > time.Second/rate {
			t.Fatalf("a refusal: %+v; want a wait of at most one emission interval", refused)
		}
		if refused.RetryAfterSeconds() != 1 {
			t.Fatalf("RetryAfterSeconds %d", refused.RetryAfterSeconds())
		}
	})

	t.Run("another merchant is unaffected", func(t *testing.T) {
		for i := range burst {
			l := a
			if i%2 == 1 {
				l = b
			}
			if d := l.Allow(ctx, "other", 1); !d.Allowed || d.Backend != BackendRedis {
				t.Fatalf("other merchant, request %d: %+v", i, d)
			}
		}
	})

	t.Run("keys are namespaced and expire", func(t *testing.T) {
		raw := client(t, srv.addr)
		key := "rate:" + keyPrefix + PolicyRESTCalls + ":shared"
		ttl, err := raw.TTL(ctx, key).Result()
		if err != nil || ttl <= 0 || ttl > (burst/rate+1)*time.Second {
			t.Fatalf("TTL of %s: %v, %v; want set, at most the time to refill", key, ttl, err)
		}
	})

	t.Run("requests and REST calls are separate budgets in Redis", func(t *testing.T) {
		c := Config{RequestsPerSecond: 1, RequestsBurst: 3, RESTCallsPerSecond: 1, RESTBurst: 100, Redis: client(t, srv.addr), RedisTimeout: upRedisTimeout}
		l := newRedisLimiter(t, c)
		for i := range 3 {
			if d := l.Allow(ctx, "two-budgets", 10); !d.Allowed {
				t.Fatalf("request %d: %+v", i+1, d)
			}
		}
		d := l.Allow(ctx, "two-budgets", 10)
		if d.Allowed || d.Policy != PolicyRequests || d.Backend != BackendRedis {
			t.Fatalf("4th request: %+v; want refused by requests", d)
		}
		// The refused request spent no REST calls: 70 are left (60 if it had).
		rl := newRedisLimiter(t, Config{RESTCallsPerSecond: 1, RESTBurst: 100, Redis: client(t, srv.addr), RedisTimeout: upRedisTimeout})
		if d := rl.Allow(ctx, "two-budgets", 70); !d.Allowed {
			t.Fatalf("the REST budget after 3 requests of 10: %+v; want 70 left", d)
		}
	})
}

// TestRedisStoppedFallsBackAndRecovers: Redis dies under a running Limiter;
// requests are decided by the local budgets without an error, and Redis is
// used again once it is back.
func TestRedisStoppedFallsBackAndRecovers(t *testing.T) {
	srv := startRedis(t)
	ctx := context.Background()
	var mu sync.Mutex
	outcomes := map[string]int{}
	l := newRedisLimiter(t, Config{
		RESTCallsPerSecond: 1, RESTBurst: 5, Redis: client(t, srv.addr), RedisBackoff: 100 * time.Millisecond,
		OnDecision: func(o string) { mu.Lock(); outcomes[o]++; mu.Unlock() },
	})
	if d := l.Allow(ctx, "m", 1); !d.Allowed || d.Backend != BackendRedis {
		t.Fatalf("before: %+v", d)
	}
	srv.Stop()

	t.Run("local limits while Redis is down", func(t *testing.T) {
		allowed := 0
		for i := range 10 {
			d := l.Allow(ctx, "m", 1)
			if d.Backend != BackendLocal {
				t.Fatalf("request %d with Redis down: %+v", i, d)
			}
			if d.Allowed {
				allowed++
			}
		}
		// The local budget starts full (it knows nothing of Redis's) and
		// refills by at most one unit a second.
		if allowed < 5 || allowed > 6 {
			t.Fatalf("%d allowed with Redis down; want the local burst of 5 (6 if a second passed)", allowed)
		}
		if l.RedisErrors() == 0 {
			t.Fatal("no Redis error counted")
		}
		mu.Lock()
		defer mu.Unlock()
		if outcomes[OutcomeFallbackAllowed] < 5 || outcomes[OutcomeFallbackLimited] < 4 {
			t.Fatalf("outcomes %v", outcomes)
		}
	})

	t.Run("back to Redis when it answers", func(t *testing.T) {
		srv.start(t) // the same port: what a restarted Redis behind REDIS_URL looks like
		deadline := time.Now().Add(10 * time.Second)
		for {
			d := l.Allow(ctx, "after", 1)
			if d.Backend == BackendRedis {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("still %+v 10 s after Redis came back", d)
			}
			time.Sleep(20 * time.Millisecond)
		}
		mu.Lock()
		defer mu.Unlock()
		if outcomes[OutcomeAllowed] < 2 {
			t.Fatalf("outcomes %v", outcomes)
		}
	})
}

// TestRedisSilent: a Redis that accepts connections and never answers
// costs one request the Limiter's deadline, not the client's read timeout
// (5 s here), and then nothing during the backoff.
func TestRedisSilent(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		// A Redis that takes the connection and never reads from it (the
		// address an IP, so that nothing is looked up): one
		// end of an in-memory pipe, inside the bubble, so that the 50 ms
		// deadline passes on the bubble's clock.
		var held []net.Conn
		c := redis.NewClient(&redis.Options{
			Addr: "127.0.0.1:6379", ContextTimeoutEnabled: true, MaxRetries: -1,
			DialTimeout: 5 * time.Second, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second,
			Dialer: func(context.Context, string, string) (net.Conn, error) {
				client, server := net.Pipe()
				held = append(held, server)
				return client, nil
			},
		})
		t.Cleanup(func() {
			_ = c.Close()
			for _, s := range held {
				s.Close()
			}
		})
		l := newRedisLimiter(t, Config{RequestsPerSecond: 1, RequestsBurst: 50, Redis: c, RedisBackoff: time.Hour})
		ctx := context.Background()

		start := time.Now()
		d := l.Allow(ctx, "m", 0)
		if took := time.Since(start); took != DefaultRedisTimeout {
			t.Fatalf("Allow against a silent Redis took %v on the bubble's clock: want the %v deadline", took, DefaultRedisTimeout)
		}
		if !d.Allowed || d.Backend != BackendLocal {
			t.Fatalf("%+v", d)
		}
		for range 20 {
			if d := l.Allow(ctx, "m", 0); d.Backend != BackendLocal {
				t.Fatalf("%+v", d)
			}
		}
		if n := l.RedisErrors(); n != 1 {
			t.Fatalf("RedisErrors %d: Redis was tried during the backoff", n)
		}
	})
}
