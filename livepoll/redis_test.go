package livepoll

// The Store of a fleet on a real redis-server: three hubs (three
// replicas) share one poller per key, each of their subscribers gets each
// transition once with the same id, a client resumes on another replica,
// and a replica whose lease lapses (it died) is taken over within one
// Interval.

import (
	"bytes"
	"context"
	"net"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"paygraph/internal/testenv"
)

func startRedis(t *testing.T) *redis.Client {
	t.Helper()
	port := testenv.FreeLoopbackPort(t)
	var out bytes.Buffer
	cmd := exec.Command(testenv.Tool(t, "redis-server"), "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", t.TempDir())
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	c := redis.NewClient(&redis.Options{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	for deadline := time.Now().Add(10 * time.Second); c.Ping(context.Background()).Err() != nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("redis-server did not answer: %s", out.String())
		}
	}
	return c
}

// resource is a REST resource whose state the test sets; fetch counts
// the calls, as the REST API's log would.
type resource struct {
	mu    sync.Mutex
	state string
	calls atomic.Int64
}

func (r *resource) set(s string) { r.mu.Lock(); r.state = s; r.mu.Unlock() }

func (r *resource) fetch(ctx context.Context) (Snapshot, error) {
	r.calls.Add(1)
	r.mu.Lock()
	defer r.mu.Unlock()
	ph := PhaseOpen
	switch r.state {
	case "SUCCEEDED":
		ph = PhaseSettled
	case "REFUNDED":
		ph = PhaseFinal
	}
	return Snapshot{Value: r.state, Fingerprint: r.state, Phase: ph, Data: []byte(r.state)}, nil
}

func decodeString(kind string, b []byte) (any, error) { return string(b), nil }

// killable is a Store that stops answering when its replica "dies": its
// lease is neither renewed nor given up, as when a process is killed.
type killable struct {
	Store
	dead atomic.Bool
}

func (k *killable) Lease(ctx context.Context, key Key, ttl, keep time.Duration) (bool, error) {
	if k.dead.Load() {
		<-ctx.Done()
		return false, ctx.Err()
	}
	return k.Store.Lease(ctx, key, ttl, keep)
}

func (k *killable) Release(ctx context.Context, key Key) {
	if !k.dead.Load() {
		k.Store.Release(ctx, key)
	}
}

func TestRedisStoreFleet(t *testing.T) {
	rdb := startRedis(t)
	const interval = 200 * time.Millisecond
	res := &resource{state: "PENDING"}
	var hubs []*Hub
	var stores []*killable
	for range 3 {
		st := &killable{Store: NewRedisStore(rdb, 0)}
		h, err := New(Config{Interval: interval, MaxInterval: interval, Store: st, Decode: decodeString})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(h.Close)
		hubs, stores = append(hubs, h), append(stores, st)
	}
	k := Key{Merchant: "m_fleet", Kind: "payment", ID: "pay_fleet"}
	var subs []*Subscription
	for _, h := range hubs {
		for range 2 {
			s, err := h.Subscribe(context.Background(), k, res.fetch)
			if err != nil {
				t.Fatal(err)
			}
			subs = append(subs, s)
		}
	}
	first, _ := next(t, subs[0])
	for _, s := range subs[1:] {
		if ev, _ := next(t, s); ev.ID != first.ID || ev.Snapshot.Value != "PENDING" {
			t.Fatalf("first event %+v, want PENDING %d", ev, first.ID)
		}
	}

	t.Run("one poll per interval for the fleet", func(t *testing.T) {
		before, start := res.calls.Load(), time.Now()
		time.Sleep(10 * interval)
		polls, most := res.calls.Load()-before, int64(time.Since(start)/time.Duration(float64(interval)*0.9))+1
		if polls > most {
			t.Errorf("%d polls in %v: one poller polls at most %d", polls, time.Since(start), most)
		}
		if polls < most/2 {
			t.Errorf("%d polls in %v: nobody polls", polls, time.Since(start))
		}
	})

	leader := -1
	for i, h := range hubs {
		h.mu.Lock()
		if p := h.pollers[k]; p != nil && p.leader.Load() {
			leader = i
		}
		h.mu.Unlock()
	}
	if leader < 0 {
		t.Fatal("no replica holds the lease")
	}

	res.set("SUCCEEDED")
	for _, s := range subs {
		if ev, _ := next(t, s); ev.ID != first.ID+1 || ev.Snapshot.Value != "SUCCEEDED" {
			t.Fatalf("second event %+v, want SUCCEEDED %d", ev, first.ID+1)
		}
	}

	t.Run("a client resumes on another replica", func(t *testing.T) {
		other := hubs[(leader+1)%3]
		s, err := other.SubscribeAfter(context.Background(), k, res.fetch, first.ID)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if ev, _ := next(t, s); ev.ID != first.ID+1 || ev.Snapshot.Value != "SUCCEEDED" {
			t.Fatalf("resumed with %+v", ev)
		}
	})

	t.Run("a lease lost with its replica is taken over within one interval", func(t *testing.T) {
		stores[leader].dead.Store(true)
		hubs[leader].Close() // its subscribers end; its lease is left to lapse
		before := res.calls.Load()
		killed := time.Now()
		for res.calls.Load() == before {
			if time.Since(killed) > 10*interval {
				t.Fatal("nobody polls after the leader died")
			}
			time.Sleep(5 * time.Millisecond)
		}
		// Measured from the last renewal the dead replica could have made
		// (one tick before it died at most): the lease lives two ticks, a
		// keeper tries every tick, its poller looks every tick.
		if took := time.Since(killed); took > interval+interval/4 {
			t.Errorf("taken over after %v, want within one interval (%v) of the lease's last renewal", took, interval)
		}
		res.set("REFUNDED")
		for i, s := range subs {
			if i/2 == leader {
				continue
			}
			evs := drain(t, s)
			if len(evs) != 1 || evs[0].ID != first.ID+2 || evs[0].Snapshot.Value != "REFUNDED" || s.Err() != nil {
				t.Fatalf("subscriber %d after the takeover: %s %v", i, fingerprints(evs), s.Err())
			}
		}
	})

	t.Run("what Redis holds for the resource", func(t *testing.T) {
		lease, events := redisKeys(k)
		n, err := rdb.MemoryUsage(context.Background(), events).Result()
		if err != nil {
			t.Fatal(err)
		}
		l, _ := rdb.MemoryUsage(context.Background(), lease).Result()
		t.Logf("Redis MEMORY USAGE: events stream of 3 transitions %d B, lease %d B", n, l)
	})
}
