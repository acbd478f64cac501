package e2e

// Issue 22's items 2 to 5 ("a caller the REST API has not accepted is not
// a merchant"), each against the gateway binary (GOMEMLIMIT=160MiB,
// defaults unless a test says otherwise) in front of the counting REST
// fake, which answers 401 to unknown pairs. Each prints the figure
// for today next to the one measured now and checks the bound;
// each runs in seconds. Item 1 and item 6 are in unaccepted_test.go.
//
//	go test -count=1 -run 'TestUnaccepted|TestJunkAPQ|TestAnonymousIntrospection|TestMintsAndQueries' -v ./e2e/

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"paygraph/apqstore"
	"paygraph/internal/testenv"
)

// hammer runs send(i) from workers goroutines, i = 0, 1, 2, ..., until n
// calls were made (n > 0) or the window closed (window > 0), whichever
// comes first; it returns how many were made and how long it took.
func hammer(workers, n int, window time.Duration, send func(i int)) (int, time.Duration) {
	var next, made atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				if window > 0 && time.Since(start) >= window {
					return
				}
				i := int(next.Add(1)) - 1
				if n > 0 && i >= n {
					return
				}
				send(i)
				made.Add(1)
			}
		}()
	}
	wg.Wait()
	return int(made.Load()), time.Since(start)
}

// tally counts outcomes from many goroutines.
type tally struct {
	mu sync.Mutex
	m  map[string]int
}

func (c *tally) add(outcome string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]int{}
	}
	c.m[outcome]++
}

func (c *tally) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return outcomes(c.m)
}

// ---- item 2 ----

// TestUnacceptedSubscriptions is issue 22's item 2: against a REST API at
// 3 s latency, 2,000 SSE subscriptions with invented pairs (the issue's
// count) are opened from 127.0.0.2 in a burst; merchant B's query and B's
// new subscription are timed before and during them.
func TestUnacceptedSubscriptions(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the gateway binary against a 3 s REST API for about 15 s: not in -short")
	}
	if !loopbackAlias(t) {
		t.Skip("127.0.0.2 is not usable as a source address here")
	}
	const (
		fakeSubs = 2000
		latency  = 3 * time.Second
		interval = 2 * time.Second // SUBSCRIPTION_POLL_INTERVAL's default
	)
	fake := newRESTFake(t)
	figs := &figures{}
	t.Cleanup(func() { t.Logf("issue 22, subscriptions of invented pairs:\n%s", figs.table()) })
	g := startLiveGateway(t, fake, nil)
	fake.SetLatency(latency)
	pays := fake.sb.Payments(fake.B.biz.APIKey)
	q, want := probeQuery(fake)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	// firstEvent opens B's subscription of a payment and times its first
	// event.
	firstEvent := func(id string) (time.Duration, string) {
		start := time.Now()
		evs, status, err := sseOpen(ctx, g.proc, fake.B.Header(), id)
		if err != nil || status != http.StatusOK {
			return time.Since(start), fmt.Sprintf("open: %d %v", status, err)
		}
		select {
		case ev, ok := <-evs:
			if !ok {
				return time.Since(start), "stream ended"
			}
			if ev.code != "" {
				return time.Since(start), ev.code
			}
			return time.Since(start), "ok"
		case <-time.After(15 * time.Second):
			return 15 * time.Second, "no event in 15 s"
		}
	}
	// Unloaded: B's query (which makes B an accepted merchant), then its
	// subscription.
	unloadedQ, okQ, outQ := probe(g.proc, q, want, 15*time.Second)
	if !okQ {
		t.Fatalf("B's unloaded query: %s", outQ)
	}
	unloadedSub, outSub := firstEvent(pays[1].ID)
	if outSub != "ok" {
		t.Fatalf("B's unloaded subscription: %s", outSub)
	}

	// The flood: 2,000 subscriptions, each with a pair never seen, 64 at
	// a time, from 127.0.0.2; each stream is read until the test ends.
	flooder := &proc{URL: g.URL, client: &http.Client{Transport: &http.Transport{
		DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}).DialContext,
	}}}
	t.Cleanup(flooder.client.CloseIdleConnections)
	fake.Reset()
	stopG := g.sampleGoroutines(100 * time.Millisecond)
	var opened tally
	sent, took := hammer(64, fakeSubs, 0, func(i int) {
		h := http.Header{"X-Api-Key": {fmt.Sprintf("ak_test_sub%08d", i)}, "X-Api-Secret": {fmt.Sprintf("sk_test_sub%08d", i)}}
		evs, status, err := sseOpen(ctx, flooder, h, fmt.Sprintf("pay_prod_%032x", i))
		switch {
		case err != nil:
			opened.add("conn-error")
		case status != http.StatusOK:
			opened.add("http-" + strconv.Itoa(status))
		default:
			go func() {
				first := true
				for ev := range evs {
					if first && ev.code != "" {
						opened.add("stream:" + ev.code)
					}
					first = false
				}
				if first {
					opened.add("stream ended without an event")
				}
			}()
		}
	})
	// Loaded: B's query and B's new subscription, at once.
	var loadedQ, loadedSub time.Duration
	var outLoadedQ, outLoadedSub string
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		var ok bool
		loadedQ, ok, outLoadedQ = probe(g.proc, q, want, 15*time.Second)
		if ok {
			outLoadedQ = "ok"
		}
	}()
	go func() { defer wg.Done(); loadedSub, outLoadedSub = firstEvent(pays[2].ID) }()
	wg.Wait()
	peakG, _ := stopG()
	invented := fake.CallsBy("")
	heap, goroutines := g.heap(t)

	figs.info(t, "2", "today (issue): 2,000 invented-pair subscriptions", "opened in 0.7 s, all admitted; 9,434 goroutines; B's query 10.9 s (3.0 s alone); B's new subscription no event in 10 s")
	figs.info(t, "2", fmt.Sprintf("%d invented-pair subscriptions from 127.0.0.2: opened in; their fate", sent),
		took.Round(10*time.Millisecond).String()+"; "+opened.String())
	figs.check(t, "2", "B's query unloaded / under them", ms(unloadedQ)+" / "+ms(loadedQ)+" ("+outLoadedQ+")",
		"<= unloaded + 1 s", outLoadedQ == "ok" && loadedQ <= unloadedQ+time.Second)
	figs.check(t, "2", "B's new subscription, first event: unloaded / under them", ms(unloadedSub)+" / "+ms(loadedSub)+" ("+outLoadedSub+")",
		fmt.Sprintf("<= unloaded + one poll interval (%v)", interval), outLoadedSub == "ok" && loadedSub <= unloadedSub+interval)
	figs.check(t, "2", "peak goroutines during them; REST calls of invented pairs",
		fmt.Sprintf("%d; %d", peakG, invented), "< 2,000 goroutines", peakG > 0 && peakG < fakeSubs)
	figs.info(t, "2", "after: heap in use, goroutines (subscriptions still open)", fmt.Sprintf("%s, %d", mib(heap), goroutines))
	rssFigure(t, figs, "2", "2,000 invented-pair subscriptions", g.proc)
}

// ---- item 3 ----

// TestJunkAPQ is issue 22's item 3: 5,000 anonymous POSTs, each a
// 32,000-byte string that is not GraphQL with its correct sha256Hash,
// through a gateway with REDIS_URL set. Redis's keys and used memory and
// the gateway's heap in use (after a forced GC) are read before and after.
// It runs twice: with the shared anonymous budget (it refuses most),
// and with the anonymous budget off, so that every registration reaches
// the APQ step. A merchant's valid registration, stored, shows that the
// test sees a registration when there is one.
func TestJunkAPQ(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 320 MB of junk to the gateway binary: not in -short")
	}
	const (
		junk      = 5000
		junkSize  = 32000
		heapSlack = 4 << 20 // GC noise of a process serving nothing
	)
	fake := newRESTFake(t)
	figs := &figures{}
	t.Cleanup(func() { t.Logf("issue 22, junk APQ registrations:\n%s", figs.table()) })
	rds := startRedisProcess(t, testenv.Tool(t, "redis-server"))
	opts, err := redis.ParseURL(rds.URL)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	// Redis's keys, of them the APQ store's, and its used memory.
	redisFigures := func() (keys, apq int, used int64) {
		n, err := rdb.DBSize(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		apqKeys, err := rdb.Keys(ctx, apqstore.DefaultPrefix+"*").Result()
		if err != nil {
			t.Fatal(err)
		}
		info, err := rdb.InfoMap(ctx, "memory").Result()
		if err != nil {
			t.Fatal(err)
		}
		used, _ = strconv.ParseInt(info["Memory"]["used_memory"], 10, 64)
		return int(n), len(apqKeys), used
	}
	// The junk: distinct 32,000-byte strings (no GraphQL token can start
	// them), their bodies built once.
	bodies := make([][]byte, junk)
	for i := range bodies {
		text := fmt.Sprintf("%%%08d ", i) + strings.Repeat("%junk ", junkSize/6)
		text = text[:junkSize]
		sum := sha256.Sum256([]byte(text))
		bodies[i], _ = json.Marshal(map[string]any{"query": text, "extensions": map[string]any{
			"persistedQuery": map[string]any{"version": 1, "sha256Hash": hex.EncodeToString(sum[:])}}})
	}
	figs.info(t, "3", "today (issue): 5,000 junk registrations", "each GRAPHQL_VALIDATION_FAILED and stored: Redis 1 MB -> 159 MB (kept 24 h); 32 MB kept for good in the local APQ cache")
	for _, tc := range []struct {
		name string
		env  map[string]string
	}{
		// The per-address budget and the refusal delay off in both: the
		// junk comes from one address, and at its 2/s with each refusal
		// held a second the 5,000 would take minutes for no other figure
		// (they only refuse more, and sooner; what is measured is what a
		// refused or admitted registration leaves in Redis and the heap).
		{"shared anonymous budget", map[string]string{"RATE_LIMIT_ANONYMOUS_PER_ADDRESS_PER_SECOND": "0", "REFUSAL_DELAY_MAX": "0"}},
		{"anonymous budget off", map[string]string{"RATE_LIMIT_ANONYMOUS_PER_SECOND": "0", "RATE_LIMIT_ANONYMOUS_PER_ADDRESS_PER_SECOND": "0", "REFUSAL_DELAY_MAX": "0"}},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			env := map[string]string{"REDIS_URL": rds.URL}
			for k, v := range tc.env {
				env[k] = v
			}
			g := startLiveGateway(t, fake, env)
			// The control's merchant, accepted by the REST API before the
			// junk: a pair not yet accepted is anonymous, and the junk
			// spends this address's anonymous budget.
			acceptMerchants(t, g.proc, fake)
			// Warm the process (its first request builds what it keeps).
			g.do(ctx, gqlReq{Query: `{ __typename }`})
			if err := rdb.FlushDB(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			heap0, _ := g.heap(t)
			keys0, _, used0 := redisFigures()
			var got tally
			_, took := hammer(16, junk, 0, func(i int) {
				got.add(g.do(ctx, gqlReq{body: bodies[i], Timeout: 10 * time.Second}).Outcome())
			})
			g.client.CloseIdleConnections() // their buffers are the connections', not the junk's
			heap1, _ := g.heap(t)
			keys1, apq1, used1 := redisFigures()
			figs.info(t, "3", tc.name+": 5,000 junk registrations in "+took.Round(10*time.Millisecond).String()+", answers", got.String())
			figs.check(t, "3", tc.name+": Redis keys before / after; used_memory before / after",
				fmt.Sprintf("%d / %d; %s / %s", keys0, keys1, kib(used0), kib(used1)), "no key added", keys1 == keys0)
			figs.check(t, "3", tc.name+": gateway heap in use after a GC, before / after", mib(heap0)+" / "+mib(heap1),
				"+ < "+mib(heapSlack), heap1 < heap0+heapSlack)
			rssFigure(t, figs, "3", tc.name+", 5,000 junk registrations", g.proc)
			// The control: a merchant's valid registration is stored.
			valid := fmt.Sprintf(`query APQControl { payment(id: %q) { id } }`, fake.sb.Payments(fake.B.biz.APIKey)[0].ID)
			sum := sha256.Sum256([]byte(valid))
			body, _ := json.Marshal(map[string]any{"query": valid, "extensions": map[string]any{
				"persistedQuery": map[string]any{"version": 1, "sha256Hash": hex.EncodeToString(sum[:])}}})
			r := g.do(ctx, gqlReq{body: body, Header: fake.B.Header()})
			_, apq2, _ := redisFigures()
			figs.check(t, "3", tc.name+": a merchant's valid registration: answer; APQ keys in Redis",
				fmt.Sprintf("%s; %d -> %d", r.Outcome(), apq1, apq2), "ok; one key more", r.Outcome() == "ok" && apq2 == apq1+1)
		})
	}
}

// ---- item 4 ----

// schemaAliases is the anonymous introspection: 54 aliases of a
// nested __schema { types { ... fields { ... args ... } } }.
func schemaAliases() string {
	var b strings.Builder
	b.WriteString("{")
	for i := range 54 {
		fmt.Fprintf(&b, " s%d: __schema { types { name kind description fields { name description args { name description type { name kind ofType { name kind } } } type { name kind ofType { name kind ofType { name kind } } } } } }", i)
	}
	b.WriteString(" }")
	return b.String()
}

// TestAnonymousIntrospection is issue 22's item 4: 16 anonymous senders
// of the 54-alias __schema document (from a process of their own, at
// nice 10: flood_test.go), while merchant B looks up one payment at a
// time, back to back. The senders send in every other 100 ms slice
// (floodSlice) and are idle in the others, which are B's unloaded
// baseline: measured in the same seconds as the loaded figure, the noise
// of a machine shared with other jobs falls on both alike, and each p99
// is read from thousands of lookups. Checked: every answer to the senders
// within MAX_RESPONSE_BYTES, and the bound, B's p99 under the
// senders within 2x of its unloaded p99: measured 0.88x-1.31x in 40
// runs on two cores at load average 7-16, 2,800-5,900 lookups of each.
// (Measured unloaded first, then under the senders, with a 5 to 10 ms
// pause between lookups, the ratio was 0.9x-2.5x from run to run, and the
// check was 2x of B's p99 under as many GET /healthz senders;
// docs/reliability.md has the figures.)
func TestAnonymousIntrospection(t *testing.T) {
	if testing.Short() {
		t.Skip("floods the gateway binary for about 10 s: not in -short")
	}
	const (
		senders = 16
		window  = 4 * time.Second // of each: the senders' slices, the idle ones
		factor  = 2.0             // the issue's
	)
	fake := newRESTFake(t)
	figs := &figures{}
	t.Cleanup(func() { t.Logf("issue 22, anonymous introspection:\n%s", figs.table()) })
	p := startGateway(t, backToBack(map[string]string{"REST_BASE_URL": fake.URL}))
	acceptMerchants(t, p, fake)
	doc := gqlReq{Query: schemaAliases()}.encoded().body

	// The senders' slices and idle ones (a nil body and no path) take
	// turns, floodSlice each.
	res := probeUnder(t, p, fake, floodSpec{URL: p.URL, Workers: senders, Window: 2 * window, Slice: floodSlice,
		Bodies: []json.RawMessage{doc, nil}, Nice: 10})
	loaded, unloaded := res.probes[0], res.probes[1]

	p99u, p99l := percentile(unloaded, 99), percentile(loaded, 99)
	figs.info(t, "4", "today (issue): 54-alias __schema (8.6 KB) answer; B's p50 / p99 unloaded -> under 16 anonymous senders",
		"985 KB each; 1.25 ms -> 284 ms / 3.4 ms -> 868 ms")
	figs.info(t, "4", fmt.Sprintf("%d requests in %v from %d senders of the %d B anonymous document (in their slices, every other %v): answers",
		res.sent, window, senders, len(doc), floodSlice), outcomes(res.floodOutcomes))
	figs.info(t, "4", "CPU time of the gateway (the senders' slices / the idle slices); of the senders' process (nice 10)",
		ms(res.cpu[0])+" / "+ms(res.cpu[1])+"; "+ms(res.floodCPU))
	figs.check(t, "4", "largest answer to the senders", kib(res.largest), "<= MAX_RESPONSE_BYTES (8 MiB)", res.largest <= 8<<20 && res.sent > 0)
	figs.info(t, "4", "B's lookups unloaded (the idle slices): p50 / p90 / p99 / max", spread(unloaded))
	figs.info(t, "4", "B's lookups under the anonymous senders: p50 / p90 / p99 / max", spread(loaded))
	figs.check(t, "4", "B's p99 under the anonymous senders / unloaded",
		fmt.Sprintf("%s / %s (%.2fx; %d across a switch not counted, %d wrong)", us(p99l), us(p99u), float64(p99l)/float64(max(p99u, 1)), res.straddled, res.probeFailed),
		fmt.Sprintf("<= %.0fx", factor), res.probeFailed == 0 && len(loaded) >= minLookups && len(unloaded) >= minLookups && float64(p99l) <= factor*float64(p99u))
}

// ---- item 5 ----

// TestMintsAndQueries is issue 22's item 5: 16 senders with merchant A's
// pair, half minting session tokens (POST /auth/token), half querying
// /graphql, for 3 s at RATE_LIMIT_REST_CALLS_PER_SECOND=4, burst 20
// (MAX_COMPLEXITY 20, which the burst must admit):
// the REST calls of A's pair, counted by the REST fake, within
// burst + rate x t; then the same with a fresh invented pair a mint, whose
// calls draw on the unaccepted pairs' shared budget.
func TestMintsAndQueries(t *testing.T) {
	if testing.Short() {
		t.Skip("floods the gateway binary for about 6 s: not in -short")
	}
	const (
		senders = 16
		window  = 3 * time.Second
		rate    = 4
		burst   = 20
	)
	fake := newRESTFake(t)
	figs := &figures{}
	t.Cleanup(func() { t.Logf("issue 22, /auth/token and /graphql of one pair:\n%s", figs.table()) })
	p := startGateway(t, map[string]string{
		"REST_BASE_URL":                    fake.URL,
		"TOKEN_KEYS":                       strings.Repeat("2e", 32),
		"RATE_LIMIT_REST_CALLS_PER_SECOND": strconv.Itoa(rate),
		"MAX_COMPLEXITY":                   strconv.Itoa(burst), // the burst: five seconds of the rate, at least this
	})
	mint := func(h http.Header) string {
		req, _ := http.NewRequest(http.MethodPost, p.URL+"/auth/token", bytes.NewReader([]byte(`{"ttlSeconds":600,"scope":{"kind":"all"}}`)))
		req.Header = h.Clone()
		req.Header.Set("Content-Type", "application/json")
		resp, err := p.client.Do(req)
		if err != nil {
			return "conn-error"
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return "mint-" + strconv.Itoa(resp.StatusCode)
	}
	q, _ := probeQuery(fake)
	q.Header = fake.A.Header()
	q.Variables = map[string]any{"id": fake.sb.Payments(fake.A.biz.APIKey)[0].ID}
	q = q.encoded()

	fake.Reset()
	var got tally
	sent, took := hammer(senders, 0, window, func(i int) {
		if i%2 == 0 {
			got.add(mint(fake.A.Header()))
			return
		}
		got.add("graphql-" + p.do(context.Background(), q).Outcome())
	})
	calls := fake.CallsBy("A")
	bound := burst + int(rate*took.Seconds()+0.999)
	figs.info(t, "5", "today (issue): 16 senders minting with one valid pair, 10 s", "31,460 mints, 31,460 REST calls (the same pair on /graphql: 2,399)")
	figs.info(t, "5", fmt.Sprintf("%d requests of A in %v, half mints: answers", sent, took.Round(10*time.Millisecond)), got.String())
	figs.check(t, "5", "REST calls of A's pair through /auth/token and /graphql together", strconv.Itoa(calls),
		fmt.Sprintf("<= %d (burst %d + %d/s x t)", bound, burst, rate), calls > 0 && calls <= bound)

	fake.Reset()
	var gotRandom tally
	sent, took = hammer(senders, 0, window, func(i int) {
		gotRandom.add(mint(http.Header{"X-Api-Key": {fmt.Sprintf("ak_test_mint%08d", i)}, "X-Api-Secret": {fmt.Sprintf("sk_test_mint%08d", i)}}))
	})
	invented := fake.CallsBy("")
	ubound := unacceptedBurst + int(unacceptedRate*took.Seconds()+0.999)
	figs.info(t, "5", "today (issue): 16 senders minting with random pairs, 10 s", "31,779 REST calls")
	figs.info(t, "5", fmt.Sprintf("%d mints with a fresh pair each in %v: answers", sent, took.Round(10*time.Millisecond)), gotRandom.String())
	figs.check(t, "5", "REST calls of the invented pairs", strconv.Itoa(invented),
		fmt.Sprintf("<= %d (burst %d + %d/s x t)", ubound, unacceptedBurst, unacceptedRate), invented <= ubound)
}
