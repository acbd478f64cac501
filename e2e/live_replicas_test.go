package e2e

// Live status across a fleet (issue 28), with the rig of replicas_test.go:
// one redis-server, the sandbox REST API (whose admin API moves payments)
// behind a log of when each payment was polled, and three gateway
// processes with REDIS_URL.
//
//   - TestLiveFleet: 300 subscribers over SSE spread over the three
//     replicas watch 10 payments that go PENDING -> SUCCEEDED -> REFUNDED:
//     each payment is polled by one replica for the fleet (never two polls
//     of one payment closer than a poll interval's jitter allows, and no
//     more polls than one poller makes), and every subscriber gets every
//     transition once, in order, with the same event ids.
//   - TestLiveChaos: a client cut four times during PENDING -> SUCCEEDED
//     -> REFUNDED, reconnecting to another replica each time with its
//     Last-Event-ID, gets each transition once; a replica holding the
//     leases of three watched payments is killed (SIGKILL) and the others
//     take over within one poll interval, losing no transition.
//
// Poll interval 400 ms: a lease lives 200 ms and is renewed every 100 ms,
// room enough on a loaded CI machine.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"paygraph/internal/testenv"
	"paygraph/sandbox"
)

const livePollInterval = 400 * time.Millisecond

const livePaymentSub = `subscription($id: ID!) { paymentUpdated(id: $id) { id status } }`

// pollLog records when each payment was fetched (GET /api/v1/payments/{id}).
type pollLog struct {
	mu    sync.Mutex
	polls map[string][]time.Time
}

func (l *pollLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id, ok := strings.CutPrefix(r.URL.Path, "/api/v1/payments/"); ok && r.Method == http.MethodGet {
			l.mu.Lock()
			l.polls[id] = append(l.polls[id], time.Now())
			l.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	})
}

func (l *pollLog) of(id string) []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.polls[id])
}

// liveFleet is the rig: Redis, the sandbox behind a poll log, replicas.
type liveFleet struct {
	redisURL string
	sb       *sandbox.Server
	biz      sandbox.Business
	log      *pollLog
	replicas []*replica
}

func startLiveFleet(t *testing.T, n int) *liveFleet {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the gateway binary: not in -short")
	}
	rds := startRedisProcess(t, testenv.Tool(t, "redis-server"))
	sb := sandbox.New(sandbox.Options{})
	f := &liveFleet{redisURL: rds.URL, sb: sb, biz: sb.Businesses()[0], log: &pollLog{polls: map[string][]time.Time{}}}
	restURL := serveLoopback(t, f.log.wrap(sb))
	env := map[string]string{"REST_BASE_URL": restURL, "REDIS_URL": rds.URL,
		"SUBSCRIPTION_POLL_INTERVAL": livePollInterval.String(), "SUBSCRIPTION_MAX": "4000",
		"RATE_LIMIT_REQUESTS_PER_SECOND": "0"}
	for i := range n {
		f.replicas = append(f.replicas, startReplica(t, string(rune('A'+i)), env))
	}
	return f
}

// pending returns n PENDING payments of the fleet's business.
func (f *liveFleet) pending(t *testing.T, n int) []string {
	t.Helper()
	var ids []string
	for _, p := range f.sb.Payments(f.biz.APIKey) {
		if p.Status == "PENDING" && len(ids) < n {
			ids = append(ids, p.ID)
		}
	}
	if len(ids) < n {
		t.Fatalf("%d PENDING payments, want %d", len(ids), n)
	}
	return ids
}

func (f *liveFleet) set(t *testing.T, id, status string) {
	t.Helper()
	if err := f.sb.SetPaymentStatus(f.biz.APIKey, id, status); err != nil {
		t.Fatal(err)
	}
}

// liveEv is one SSE event of paymentUpdated.
type liveEv struct {
	status, eventID, sseID, code string
	done                         bool
}

// sse opens a graphql-sse stream of paymentUpdated(id) on r, resuming
// after lastID when not "". Its events come on the channel, which closes
// when the stream ends or ctx is cancelled.
func sse(t *testing.T, ctx context.Context, r *replica, biz sandbox.Business, id, lastID string) <-chan liveEv {
	t.Helper()
	h := http.Header{}
	h.Set("x-api-key", biz.APIKey)
	h.Set("x-api-secret", biz.APISecret)
	if lastID != "" {
		h.Set("Last-Event-ID", lastID)
	}
	out, status, err := sseOpen(ctx, r.proc, h, id)
	if err != nil {
		t.Fatalf("replica %s: %v", r.name, err)
	}
	if status != http.StatusOK {
		t.Fatalf("replica %s: SSE answer %d", r.name, status)
	}
	return out
}

// sseOpen opens a graphql-sse stream of paymentUpdated(id) on p with the
// given headers (credentials, Last-Event-ID); its events come on the
// channel, which closes when the stream ends or ctx is cancelled. An
// answer other than 200 is its status, the stream closed.
func sseOpen(ctx context.Context, p *proc, h http.Header, id string) (<-chan liveEv, int, error) {
	body, _ := json.Marshal(map[string]any{"query": livePaymentSub, "variables": map[string]any{"id": id}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL+"/graphql", bytes.NewReader(body))
	if err != nil {
		return nil, 0, err
	}
	for k, v := range h {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, 0, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, resp.StatusCode, nil
	}
	out := make(chan liveEv, 8)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		var event, sseID string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				event, sseID = "", ""
			case strings.HasPrefix(line, "id: "):
				sseID = strings.TrimPrefix(line, "id: ")
			case line == "event: complete":
				out <- liveEv{done: true}
				return
			case strings.HasPrefix(line, "event: "):
				event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: ") && event == "next":
				var m struct {
					Data struct {
						PaymentUpdated *struct{ Status string }
					}
					Errors []struct {
						Extensions struct{ Code string }
					}
					Extensions struct {
						EventID string `json:"eventId"`
					}
				}
				if json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &m) != nil {
					return
				}
				ev := liveEv{eventID: m.Extensions.EventID, sseID: sseID}
				if m.Data.PaymentUpdated != nil {
					ev.status = m.Data.PaymentUpdated.Status
				}
				if len(m.Errors) > 0 {
					ev.code = m.Errors[0].Extensions.Code
				}
				select {
				case out <- ev:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out, http.StatusOK, nil
}

// nextLive waits for the next event (the wait is a hang guard only).
func nextLive(t *testing.T, c <-chan liveEv, what string) liveEv {
	t.Helper()
	select {
	case ev, ok := <-c:
		if !ok {
			t.Fatalf("%s: the stream ended", what)
		}
		return ev
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: no event in 30s", what)
	}
	return liveEv{}
}

// checkOnePoller fails when a payment was polled more often than one
// poller polls: two polls closer than the shortest wait (0.9 interval,
// the jitter), less a margin for the REST call's own timing.
func checkOnePoller(t *testing.T, log *pollLog, ids []string, from time.Time) {
	t.Helper()
	for _, id := range ids {
		var polls []time.Time
		for _, p := range log.of(id) {
			if p.After(from) {
				polls = append(polls, p)
			}
		}
		for i := 1; i < len(polls); i++ {
			if gap := polls[i].Sub(polls[i-1]); gap < 3*livePollInterval/4 {
				t.Errorf("payment %s: polls %d and %d of %d were %v apart (at %v after the first): more than one poller in the fleet",
					id, i-1, i, len(polls), gap.Round(time.Millisecond), polls[i].Sub(polls[0]).Round(time.Millisecond))
				break
			}
		}
	}
}

func TestLiveFleet(t *testing.T) {
	f := startLiveFleet(t, 3)
	ids := f.pending(t, 10)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// 300 subscribers: 30 per payment, spread over the replicas.
	type sub struct {
		id string
		r  *replica
		c  <-chan liveEv
	}
	var subs []sub
	for i := range 300 {
		id, r := ids[i%10], f.replicas[i%3]
		subs = append(subs, sub{id, r, sse(t, ctx, r, f.biz, id, "")})
	}
	got := make([][]liveEv, len(subs))
	read := func(want string) {
		var wg sync.WaitGroup
		for i, s := range subs {
			wg.Go(func() {
				ev := nextLive(t, s.c, fmt.Sprintf("subscriber %d (%s on %s) waiting for %s", i, s.id, s.r.name, want))
				got[i] = append(got[i], ev)
			})
		}
		wg.Wait()
	}
	start := time.Now()
	read("PENDING")
	time.Sleep(5 * livePollInterval) // a quiet while: the polls of unchanged payments
	for _, id := range ids {
		f.set(t, id, "SUCCEEDED")
	}
	read("SUCCEEDED")
	for _, id := range ids {
		f.set(t, id, "REFUNDED")
	}
	read("REFUNDED")
	read("complete")
	elapsed := time.Since(start)
	checkRedisKeysDocumented(t, f.redisURL)

	t.Run("every subscriber gets every transition once, in order, with the fleet's ids", func(t *testing.T) {
		ref := map[string][]liveEv{} // the first subscriber's of each payment
		for i, evs := range got {
			if len(evs) != 4 || !evs[3].done {
				t.Fatalf("subscriber %d: %+v", i, evs)
			}
			for j, st := range []string{"PENDING", "SUCCEEDED", "REFUNDED"} {
				if evs[j].status != st || evs[j].eventID == "" || evs[j].sseID != evs[j].eventID {
					t.Fatalf("subscriber %d event %d: %+v, want %s with its id", i, j, evs[j], st)
				}
			}
			a, _ := strconv.ParseUint(evs[0].eventID, 10, 64)
			b, _ := strconv.ParseUint(evs[1].eventID, 10, 64)
			c, _ := strconv.ParseUint(evs[2].eventID, 10, 64)
			if b != a+1 || c != b+1 {
				t.Fatalf("subscriber %d: ids %d %d %d", i, a, b, c)
			}
			id := subs[i].id
			if r, ok := ref[id]; !ok {
				ref[id] = evs
			} else if r[0].eventID != evs[0].eventID {
				t.Fatalf("payment %s: subscriber %d on %s numbers it from %s, another from %s", id, i, subs[i].r.name, evs[0].eventID, r[0].eventID)
			}
		}
	})

	t.Run("one poll per payment per interval for the fleet, not three", func(t *testing.T) {
		checkOnePoller(t, f.log, ids, start.Add(-time.Second))
		most := int(elapsed/(9*livePollInterval/10)) + 2 // one poller: at most one poll per shortest wait
		total := 0
		for _, id := range ids {
			n := len(f.log.of(id))
			total += n
			if n > most {
				t.Errorf("payment %s: %d polls in %v, one poller makes at most %d", id, n, elapsed.Round(time.Millisecond), most)
			}
		}
		t.Logf("%d subscribers on 3 replicas, 10 payments, %v: %d REST polls (%.1f per payment per minute)",
			len(subs), elapsed.Round(time.Millisecond), total, float64(total)/10/elapsed.Minutes())
	})

	t.Run("what Redis holds per watched payment", func(t *testing.T) {
		opts, err := redis.ParseURL(f.redisURL)
		if err != nil {
			t.Fatal(err)
		}
		rdb := redis.NewClient(opts)
		defer rdb.Close()
		keys, err := rdb.Keys(context.Background(), "paygraph:live:*").Result()
		if err != nil {
			t.Fatal(err)
		}
		var bytes int64
		streams := 0
		for _, k := range keys {
			n, err := rdb.MemoryUsage(context.Background(), k).Result()
			if err != nil {
				t.Fatal(err)
			}
			bytes += n
			if strings.HasSuffix(k, ":events") {
				streams++
			}
		}
		if streams != len(ids) {
			t.Fatalf("%d event streams for %d payments: %v", streams, len(ids), keys)
		}
		t.Logf("Redis MEMORY USAGE after 3 transitions each: %d B for %d payments, %d B per payment (%d keys)", bytes, len(ids), bytes/int64(len(ids)), len(keys))
	})
}

func TestLiveChaos(t *testing.T) {
	f := startLiveFleet(t, 3)
	ids := f.pending(t, 4)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	t.Run("a client cut four times gets each transition once", func(t *testing.T) {
		id := ids[0]
		// A screen that stays on replica C: the fleet watches while the
		// client is cut.
		stay := sse(t, ctx, f.replicas[2], f.biz, id, "")
		nextLive(t, stay, "watcher PENDING")

		var seen []liveEv
		last := ""
		conn := 0
		connect := func() (<-chan liveEv, context.CancelFunc) {
			cctx, cut := context.WithCancel(ctx)
			r := f.replicas[conn%3]
			conn++
			return sse(t, cctx, r, f.biz, id, last), cut
		}
		take := func(c <-chan liveEv, what string) {
			ev := nextLive(t, c, what)
			if ev.done {
				seen = append(seen, ev)
				return
			}
			if ev.code != "" || ev.eventID == "" {
				t.Fatalf("%s: %+v", what, ev)
			}
			seen, last = append(seen, ev), ev.eventID
		}
		c, cut := connect()
		take(c, "PENDING")
		cut() // 1: cut, then the payment moves
		f.set(t, id, "SUCCEEDED")
		if ev := nextLive(t, stay, "watcher SUCCEEDED"); ev.status != "SUCCEEDED" {
			t.Fatalf("watcher: %+v", ev)
		}
		_, cut = connect()
		cut() // 2: cut before anything was read
		c, cut = connect()
		take(c, "SUCCEEDED after two cuts")
		cut() // 3
		f.set(t, id, "REFUNDED")
		if ev := nextLive(t, stay, "watcher REFUNDED"); ev.status != "REFUNDED" {
			t.Fatalf("watcher: %+v", ev)
		}
		c, cut = connect()
		take(c, "REFUNDED")
		cut() // 4: cut before the complete was read
		c, cut = connect()
		defer cut()
		take(c, "complete on resuming after the final state")

		var got []string
		for _, ev := range seen {
			got = append(got, ev.status)
		}
		if want := []string{"PENDING", "SUCCEEDED", "REFUNDED", ""}; !slices.Equal(got, want) || !seen[3].done {
			t.Fatalf("the client saw %q over %d connections, want %q then complete", got, conn, want)
		}
		a, _ := strconv.ParseUint(seen[0].eventID, 10, 64)
		c2, _ := strconv.ParseUint(seen[2].eventID, 10, 64)
		if c2 != a+2 {
			t.Fatalf("ids %s .. %s", seen[0].eventID, seen[2].eventID)
		}
	})

	t.Run("a replica holding leases is killed: taken over within one interval, nothing lost", func(t *testing.T) {
		watched := ids[1:]
		a := f.replicas[0]
		// A subscribes first: its pollers take the leases.
		for _, id := range watched {
			nextLive(t, sse(t, ctx, a, f.biz, id, ""), "A's subscriber")
		}
		type sub struct {
			id string
			c  <-chan liveEv
		}
		var subs []sub
		for _, r := range f.replicas[1:] {
			for _, id := range watched {
				s := sub{id, sse(t, ctx, r, f.biz, id, "")}
				if ev := nextLive(t, s.c, "PENDING on "+r.name); ev.status != "PENDING" {
					t.Fatalf("%s: %+v", r.name, ev)
				}
				subs = append(subs, s)
			}
		}
		time.Sleep(livePollInterval)
		a.kill()
		killed := time.Now()
		for _, id := range watched {
			f.set(t, id, "SUCCEEDED")
		}
		for _, s := range subs {
			if ev := nextLive(t, s.c, "SUCCEEDED after the kill"); ev.status != "SUCCEEDED" {
				t.Fatalf("%s: %+v", s.id, ev)
			}
		}
		for _, id := range watched {
			var after []time.Time
			for _, p := range f.log.of(id) {
				if p.After(killed) {
					after = append(after, p)
				}
			}
			if len(after) == 0 {
				t.Fatalf("payment %s: no poll after the kill", id)
			}
			// The dead replica renewed its lease at most a tick (interval/4)
			// before it died; the lease lives two ticks; the survivors try
			// every tick and poll at once: within one interval of it.
			if took := after[0].Sub(killed); took > livePollInterval {
				t.Errorf("payment %s: first poll %v after the kill, want within one interval (%v)", id, took.Round(time.Millisecond), livePollInterval)
			}
		}
		for _, id := range watched {
			f.set(t, id, "REFUNDED")
		}
		for _, s := range subs {
			if ev := nextLive(t, s.c, "REFUNDED"); ev.status != "REFUNDED" {
				t.Fatalf("%s: %+v", s.id, ev)
			}
			if ev := nextLive(t, s.c, "complete"); !ev.done {
				t.Fatalf("%s: %+v, want complete", s.id, ev)
			}
		}
		checkOnePoller(t, f.log, watched, killed.Add(2*livePollInterval))
	})
}
