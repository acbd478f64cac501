package apqstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/redis/go-redis/v9"

	"paygraph/internal/testenv"
)

// redisServer is a real redis-server on a free loopback port.
type redisServer struct {
	URL  string
	Addr string
	cmd  *exec.Cmd
	once sync.Once
}

// startRedis starts Debian's redis-server (scripts/ci-setup.sh installs
// it). Without it the test fails in CI (CI set) and is skipped elsewhere.
func startRedis(t *testing.T) *redisServer {
	t.Helper()
	bin := testenv.Tool(t, "redis-server")
	port := testenv.FreeLoopbackPort(t)
	var out bytes.Buffer
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--protected-mode", "yes", "--dir", t.TempDir())
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &redisServer{Addr: "127.0.0.1:" + strconv.Itoa(port), cmd: cmd}
	s.URL = "redis://" + s.Addr + "/0"
	t.Cleanup(s.Stop)
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for c.Ping(context.Background()).Err() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("redis-server did not answer on %s: %s", s.Addr, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return s
}

// Stop kills the server and waits for it.
func (s *redisServer) Stop() {
	s.once.Do(func() {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	})
}

func hash(q string) string {
	s := sha256.Sum256([]byte(q))
	return hex.EncodeToString(s[:])
}

func newStore(t *testing.T, url string, ttl time.Duration, opts ...Option) *Redis {
	t.Helper()
	r, err := NewRedis(context.Background(), url, ttl, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func TestSharedBetweenReplicas(t *testing.T) {
	srv := startRedis(t)
	ctx := context.Background()
	a := newStore(t, srv.URL, 0)
	b := newStore(t, srv.URL, 0)
	q := "{ payments(first: 1) { nodes { id } } }"
	k := hash(q)
	if _, ok := b.Get(ctx, k); ok {
		t.Fatal("hit before any Add")
	}
	a.Add(ctx, k, q)
	got, ok := b.Get(ctx, k)
	if !ok || got != q {
		t.Fatalf("replica B: Get = %q, %v; want the query registered on A", got, ok)
	}
	if st := b.Stats(); st.RedisHits != 1 || st.Misses != 1 || st.Errors != 0 {
		t.Fatalf("B stats %+v", st)
	}
	// Namespaced key, 24h TTL.
	raw := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer raw.Close()
	if v, err := raw.Get(ctx, "paygraph:apq:"+k).Result(); err != nil || v != q {
		t.Fatalf("raw key: %q, %v", v, err)
	}
	ttl, err := raw.TTL(ctx, "paygraph:apq:"+k).Result()
	if err != nil || ttl < 23*time.Hour || ttl > 24*time.Hour {
		t.Fatalf("TTL %v, %v; want about 24h", ttl, err)
	}
	// B now serves it from its local LRU, even with Redis emptied.
	if err := raw.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if got, ok := b.Get(ctx, k); !ok || got != q {
		t.Fatal("local LRU did not keep the query")
	}
	if st := b.Stats(); st.LocalHits != 1 {
		t.Fatalf("B stats %+v: want one local hit", st)
	}
}

func TestTTLAndPrefix(t *testing.T) {
	srv := startRedis(t)
	ctx := context.Background()
	a := newStore(t, srv.URL, 300*time.Millisecond, WithPrefix("other:"))
	b := newStore(t, srv.URL, 300*time.Millisecond, WithPrefix("other:"))
	c := newStore(t, srv.URL, 0) // default prefix: another namespace
	a.Add(ctx, hash("{ a }"), "{ a }")
	if _, ok := c.Get(ctx, hash("{ a }")); ok {
		t.Fatal("a store with another prefix saw the key")
	}
	// The key carries the store's TTL, to the millisecond: Redis expires
	// it then (Redis's clock, not one to wait out here).
	raw := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer raw.Close()
	if ttl, err := raw.PTTL(ctx, "other:"+hash("{ a }")).Result(); err != nil || ttl <= 0 || ttl > 300*time.Millisecond {
		t.Fatalf("PTTL %v, %v; want the store's 300ms", ttl, err)
	}
	if got, ok := b.Get(ctx, hash("{ a }")); !ok || got != "{ a }" {
		t.Fatalf("replica B: Get = %q, %v; want the query under the shared prefix", got, ok)
	}
}

func TestSizeLimits(t *testing.T) {
	srv := startRedis(t)
	ctx := context.Background()
	a := newStore(t, srv.URL, 0, WithMaxValueBytes(10))
	b := newStore(t, srv.URL, 0, WithMaxValueBytes(10))
	big := strings.Repeat("x", 11)
	a.Add(ctx, "big", big)
	if v, ok := a.Get(ctx, "big"); !ok || v != big {
		t.Fatal("an oversized query must still be kept locally")
	}
	if _, ok := b.Get(ctx, "big"); ok {
		t.Fatal("an oversized query reached Redis")
	}
	longKey := strings.Repeat("k", maxKeyBytes+1)
	if _, ok := b.Get(ctx, longKey); ok {
		t.Fatal("hit on an overlong key")
	}
	if st := b.Stats(); st.Errors != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestRedisStopped: Redis dies under a running store; everything becomes a
// quick miss, Add still works locally, and the store recovers when a Redis
// is back at the address.
func TestRedisStopped(t *testing.T) {
	srv := startRedis(t)
	ctx := context.Background()
	a := newStore(t, srv.URL, 0, WithBackoff(200*time.Millisecond))
	a.Add(ctx, "kept", "{ kept }")
	srv.Stop()

	start := time.Now()
	for i := range 20 {
		if _, ok := a.Get(ctx, fmt.Sprintf("missing-%d", i)); ok {
			t.Fatal("hit with Redis down")
		}
		a.Add(ctx, fmt.Sprintf("new-%d", i), "{ new }")
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("40 operations with Redis down took %v", d)
	}
	if v, ok := a.Get(ctx, "kept"); !ok || v != "{ kept }" {
		t.Fatal("local LRU lost a query while Redis was down")
	}
	if v, ok := a.Get(ctx, "new-3"); !ok || v != "{ new }" {
		t.Fatal("a query added while Redis was down is not served locally")
	}
	st := a.Stats()
	if st.Errors == 0 {
		t.Fatalf("stats %+v: want the failure counted", st)
	}
	if st.Skipped == 0 {
		t.Fatalf("stats %+v: want operations skipped during the backoff", st)
	}

	// A new redis-server on the same port: after the backoff, the store uses it again.
	port, _ := strconv.Atoi(strings.TrimPrefix(srv.Addr, "127.0.0.1:"))
	cmd := exec.Command(srv.cmd.Path, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	b := newStore(t, srv.URL, 0)
	deadline := time.Now().Add(10 * time.Second)
	for b.Ping(ctx) != nil {
		if time.Now().After(deadline) {
			t.Fatal("restarted redis-server does not answer")
		}
		time.Sleep(20 * time.Millisecond)
	}
	deadline = time.Now().Add(5 * time.Second)
	for {
		a.Add(ctx, hash("{ after }"), "{ after }")
		if v, ok := b.Get(ctx, hash("{ after }")); ok && v == "{ after }" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("store did not recover after Redis came back: %+v", a.Stats())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestUnreachableAtStart: a replica starts while Redis is down.
func TestUnreachableAtStart(t *testing.T) {
	var logs bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logs.Write(p)
	}), nil))
	port := testenv.FreeLoopbackPort(t) // closed again: connection refused
	start := time.Now()
	r, err := NewRedis(context.Background(), "redis://127.0.0.1:"+strconv.Itoa(port)+"/0", 0, WithLogger(logger))
	if err != nil {
		t.Fatalf("NewRedis must not fail when Redis is down: %v", err)
	}
	defer r.Close()
	if _, ok := r.Get(context.Background(), "k"); ok {
		t.Fatal("hit")
	}
	r.Add(context.Background(), "k", "{ q }")
	if v, ok := r.Get(context.Background(), "k"); !ok || v != "{ q }" {
		t.Fatal("local LRU does not serve while Redis is down")
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("took %v", d)
	}
	mu.Lock()
	defer mu.Unlock()
	if n := strings.Count(logs.String(), "Redis unavailable"); n != 1 {
		t.Fatalf("want one warning, got %d:\n%s", n, logs.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestBlackhole: a Redis that accepts connections and never answers costs
// one bounded wait, then nothing for the backoff.
func TestBlackhole(t *testing.T) {
	silent := testenv.SilentServer(t)
	ctx := context.Background()
	start := time.Now()
	r := newStore(t, "redis://"+silent+"/0", 0, WithBackoff(time.Hour))
	if d := time.Since(start); d > time.Second {
		t.Fatalf("NewRedis took %v against a silent server", d)
	}
	for i := range 100 {
		if _, ok := r.Get(ctx, fmt.Sprintf("k%d", i)); ok {
			t.Fatal("hit")
		}
		r.Add(ctx, fmt.Sprintf("k%d", i), "{ q }")
	}
	if st := r.Stats(); st.Skipped != 200 {
		t.Fatalf("stats %+v: want all 200 operations skipped during the backoff", st)
	}
}

// TestPerOperationDeadline: without a backoff every operation still ends
// within its deadline.
func TestPerOperationDeadline(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	r := newStore(t, "redis://"+ln.Addr().String()+"/0", 0, WithBackoff(-1), WithTimeouts(50*time.Millisecond, 50*time.Millisecond))
	start := time.Now()
	if _, ok := r.Get(context.Background(), "k"); ok {
		t.Fatal("hit")
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("Get against a silent server took %v", d)
	}
}

func TestBadConfig(t *testing.T) {
	t.Parallel()
	for _, url := range []string{"", "http://x", "redis://[::1"} {
		if _, err := NewRedis(context.Background(), url, 0); err == nil {
			t.Errorf("NewRedis(%q): want an error", url)
		}
	}
	if _, err := NewRedis(context.Background(), "redis://127.0.0.1:1/0", -time.Second); err == nil {
		t.Error("negative TTL accepted")
	}
}

// TestGqlgenAPQ plugs the store into gqlgen's cache interface, as the
// gateway does.
func TestGqlgenAPQ(t *testing.T) {
	srv := startRedis(t)
	var c graphql.Cache[string] = newStore(t, srv.URL, time.Minute)
	c.Add(context.Background(), hash("{ x }"), "{ x }")
	var d graphql.Cache[string] = newStore(t, srv.URL, time.Minute)
	if v, ok := d.Get(context.Background(), hash("{ x }")); !ok || v != "{ x }" {
		t.Fatal("not shared")
	}
}
