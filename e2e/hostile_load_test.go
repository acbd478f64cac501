package e2e

// TestHostileLoad is the proof of issue 11 ("Bounded by construction"):
// for each item of the "What was measured" it runs the attack
// against the gateway as its own process (GOMEMLIMIT=160MiB, as in the
// pods), measures the figure from outside (VmHWM, the answer's
// time and size, go_goroutines, the calls the REST API saw) and checks it
// against the bound the issue sets. Figures are logged per item and as one
// table at the end (docs/reliability.md, "Hostile load", keeps them).
//
//	go test -count=1 -run TestHostileLoad -v ./e2e/                       # CI size
//	PAYGRAPH_HOSTILE=long go test -count=1 -timeout 30m -run TestHostileLoad -v ./e2e/

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"paygraph/sandbox"
)

// Bounds from issue 11, "What it must show".
const (
	maxRSS          = 150 << 20 // items 1, 2, 3, 7
	maxBombTime     = time.Second
	maxBombBody     = 64 << 10
	maxGoroutines   = 10000
	probeP99Factor  = 10 // B's p99 under load <= 10 x its unloaded p50 + 200 ms
	probeP99Slack   = 200 * time.Millisecond
	restLatency3    = 50 * time.Millisecond // item 3's REST API
	breakerFailures = 5
)

// hostileScale is how hard the suite pushes: CI size by default (the
// whole suite well within 90 s on two busy cores once the fixes are in),
// PAYGRAPH_HOSTILE=long for a larger run.
type hostileScale struct {
	name         string
	cacheRefused int           // item 2: distinct refused 31 KB documents
	cacheValid   int           // item 2: distinct valid 995-field documents
	loadWindow   time.Duration // item 3: how long merchant A's load runs
	probeTimeout time.Duration // item 3: B's probe gives up after this
	bombTimeout  time.Duration // item 1: the client gives up after this
	bodyConc     int           // item 7: concurrent requests
}

func scaleFromEnv() hostileScale {
	if os.Getenv("PAYGRAPH_HOSTILE") == "long" {
		return hostileScale{name: "long", cacheRefused: 1000, cacheValid: 300, loadWindow: 30 * time.Second,
			probeTimeout: 60 * time.Second, bombTimeout: 60 * time.Second, bodyConc: 16}
	}
	return hostileScale{name: "ci", cacheRefused: 200, cacheValid: 200, loadWindow: 5 * time.Second,
		probeTimeout: 10 * time.Second, bombTimeout: 8 * time.Second, bodyConc: 8}
}

// figures collects what every item measured, for the table at the end.
type figures struct {
	mu   sync.Mutex
	rows []figureRow
}

type figureRow struct {
	item, name, value, bound string
	verdict                  string // "ok", "FAIL" or "" (shown for information)
}

// check records a figure and its bound, and fails the test when it is
// out of bounds.
func (f *figures) check(t *testing.T, item, name, value, bound string, ok bool) {
	t.Helper()
	v := "ok"
	if !ok {
		v = "FAIL"
		t.Errorf("item %s: %s = %s, want %s", item, name, value, bound)
	} else {
		t.Logf("item %s: %s = %s (bound %s)", item, name, value, bound)
	}
	f.add(figureRow{item, name, value, bound, v})
}

// info records a figure that has no bound of its own.
func (f *figures) info(t *testing.T, item, name, value string) {
	t.Helper()
	t.Logf("item %s: %s = %s", item, name, value)
	f.add(figureRow{item: item, name: name, value: value})
}

func (f *figures) add(r figureRow) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rows = append(f.rows, r)
}

func (f *figures) table() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var b strings.Builder
	b.WriteString("| item | figure | measured | bound | |\n|---|---|---|---|---|\n")
	for _, r := range f.rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", r.item, r.name, r.value, r.bound, r.verdict)
	}
	return b.String()
}

func TestHostileLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the gateway binary under load for about a minute: not in -short")
	}
	sc := scaleFromEnv()
	fake := newRESTFake(t)
	figs := &figures{}
	start := time.Now()
	t.Cleanup(func() {
		t.Logf("hostile load, scale %s, %v in all:\n%s", sc.name, time.Since(start).Round(time.Second), figs.table())
	})
	items := []struct {
		name string
		run  func(t *testing.T, sc hostileScale, fake *restFake, figs *figures)
	}{
		{"item1_validation_error_bomb", item1Bomb},
		{"item2_parsed_query_cache", item2QueryCache},
		{"item3_one_merchant_starves_another", item3Starvation},
		{"item4_list_calls_within_rest_limits", item4ListLimits},
		{"item5_complexity_in_rest_calls", item5Complexity},
		{"item6_breaker_isolation", item6Breaker},
		{"item7_rest_bodies_and_response_size", item7Bodies},
		{"item8_no_shared_cache", item8NoStore},
		{"item9_redaction_labels_and_strict_rest", item9Smaller},
	}
	for _, it := range items {
		t.Run(it.name, func(t *testing.T) {
			fake.Reset()
			fake.SetLatency(0)
			fake.Fail(nil)
			fake.Override(nil)
			it.run(t, sc, fake, figs)
		})
	}
}

// rssFigure checks a gateway's peak RSS against maxRSS.
func rssFigure(t *testing.T, figs *figures, item, what string, p *proc) {
	t.Helper()
	peak := p.PeakRSS(t)
	v := mib(peak)
	if p.KilledAt() > 0 {
		v = "killed at " + mib(peak) + " (test ceiling)"
	}
	figs.check(t, item, "peak RSS (VmHWM), "+what, v, "< 150 MiB", peak > 0 && peak < maxRSS && p.KilledAt() == 0)
}

func outcomes(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s×%d", k, m[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}

// ---- item 1 ----

// bombQuery is n copies of one alias with different arguments: the
// overlapping-fields rule reports one error per conflicting pair.
func bombQuery(n int) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		fmt.Fprintf(&b, `a:node(id:"%d"){id}`, i)
	}
	b.WriteString("}")
	return b.String()
}

func item1Bomb(t *testing.T, sc hostileScale, fake *restFake, figs *figures) {
	cases := []struct {
		name   string
		get    bool
		copies int
	}{
		{"POST_1450_copies_33KB", false, 1450},
		{"GET_680_copies_26KB_URL", true, 680},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fake.Reset()
			p := startGateway(t, map[string]string{"REST_BASE_URL": fake.URL})
			q := bombQuery(tc.copies)
			jsonBody, _ := json.Marshal(map[string]string{"query": q})
			size := fmt.Sprintf("query %d bytes, JSON body %d bytes", len(q), len(jsonBody))
			if tc.get {
				size = fmt.Sprintf("URL %d bytes", len("/graphql?"+url.Values{"query": {q}}.Encode()))
			}
			r := p.do(context.Background(), gqlReq{Query: q, GET: tc.get, Timeout: sc.bombTimeout}) // no credentials
			what := strings.ReplaceAll(tc.name, "_", " ")
			figs.info(t, "1", what+": request", size+", no credentials")
			elapsed := ms(r.Elapsed)
			if r.Outcome() == "timeout" {
				elapsed = "> " + sc.bombTimeout.String() + " (client gave up)"
			}
			figs.check(t, "1", what+": time to answer", elapsed, "< 1 s", r.Err == nil && r.Elapsed < maxBombTime)
			body := kib(r.Size)
			if r.Err != nil {
				body += " (read before " + r.Outcome() + ")"
			}
			figs.check(t, "1", what+": response body", fmt.Sprintf("%s, HTTP %d, %d errors", body, r.Status, len(r.Errors)),
				"< 64 KiB", r.Err == nil && r.Size < maxBombBody)
			figs.check(t, "1", what+": REST calls", strconv.Itoa(fake.Calls(nil)), "0", fake.Calls(nil) == 0)
			rssFigure(t, figs, "1", what, p)
		})
	}
}

// ---- item 2 ----

// fieldsQuery is a document of n aliased __typename fields, its text
// distinct for each k (the cache keys documents by their text).
func fieldsQuery(k, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "query Doc%d {", k)
	for i := range n {
		fmt.Fprintf(&b, " f%d:__typename", i)
	}
	b.WriteString(" }")
	return b.String()
}

func item2QueryCache(t *testing.T, sc hostileScale, fake *restFake, figs *figures) {
	// The query cache is GOMEMLIMIT/10: 16 MiB under the harness's 160 MiB.
	p := startGateway(t, map[string]string{"REST_BASE_URL": fake.URL})
	// A's documents make no REST call: without one answered first, A's
	// pair would stay anonymous (issue 37) and meet the anonymous budgets.
	acceptMerchants(t, p, fake)
	send := func(n int, fields int) (map[string]int, int) {
		var mu sync.Mutex
		got := map[string]int{}
		size := len(fieldsQuery(n, fields))
		next := atomic.Int64{}
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					k := int(next.Add(1))
					if k > n {
						return
					}
					r := p.do(context.Background(), gqlReq{Query: fieldsQuery(k+fields*10000, fields), Header: fake.A.Header()})
					mu.Lock()
					got[r.Outcome()]++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		return got, size
	}
	start := time.Now()
	refused, refusedSize := send(sc.cacheRefused, 1800)
	figs.check(t, "2", fmt.Sprintf("%d distinct %.0f KB documents of 1800 fields", sc.cacheRefused, float64(refusedSize)/1000),
		outcomes(refused), "all FIELD_LIMIT_EXCEEDED", refused["FIELD_LIMIT_EXCEEDED"] == sc.cacheRefused)
	afterRefused := p.PeakRSS(t)
	valid, validSize := send(sc.cacheValid, 995)
	figs.check(t, "2", fmt.Sprintf("%d distinct valid %.0f KB documents of 995 fields", sc.cacheValid, float64(validSize)/1000),
		outcomes(valid), "all ok", valid["ok"] == sc.cacheValid)
	figs.info(t, "2", "time for both sets", ms(time.Since(start)))
	figs.info(t, "2", "peak RSS after the refused set", mib(afterRefused))
	if heap, ok := metricValue(p.Metrics(), "go_memstats_heap_inuse_bytes"); ok {
		figs.info(t, "2", "heap in use after both sets", mib(int64(heap)))
	}
	if rss, err := statusField(p.PID, "VmRSS"); err == nil {
		figs.info(t, "2", "RSS after both sets", mib(rss))
	}
	rssFigure(t, figs, "2", "both sets", p)
}

// ---- item 3 ----

// starvationQuery is item 3's attack: 49 aliases of nodes(ids:) with 100
// distinct ids each (4,900 REST calls; the ids need not exist, a 404 is a
// call too), the ids in variables so that the text stays short.
func starvationQuery() gqlReq {
	var b strings.Builder
	vars := map[string]any{}
	b.WriteString("query Starve(")
	for a := range 49 {
		fmt.Fprintf(&b, "$v%d:[ID!]! ", a)
		ids := make([]string, 100)
		for i := range ids {
			ids[i] = fmt.Sprintf("pay_prod_%032x", 0xe2e0000+a*100+i)
		}
		vars["v"+strconv.Itoa(a)] = ids
	}
	b.WriteString(") {")
	for a := range 49 {
		fmt.Fprintf(&b, " a%d:nodes(ids:$v%d){id}", a, a)
	}
	b.WriteString(" }")
	return gqlReq{Query: b.String(), Variables: vars, OpName: "Starve"}
}

// withinLimitQuery is among the largest queries a merchant may send once
// complexity counts REST calls: a 100-item list with the customer.address
// join of every item (1 + 100 calls) and nodes of 100 other payments (100
// calls).
func withinLimitQuery(fake *restFake) gqlReq {
	pays := fake.sb.Payments(fake.A.biz.APIKey)
	ids := make([]string, 100)
	for i := range ids {
		ids[i] = pays[100+i].ID
	}
	return gqlReq{
		Query: `query Largest($ids: [ID!]!) {
  payments(first: 100) { nodes { id status amount { amount paisa } customer { name address } } }
  nodes(ids: $ids) { id ... on Payment { status customer { phone } } }
}`,
		Variables: map[string]any{"ids": ids},
		OpName:    "Largest",
	}
}

func probeQuery(fake *restFake) (gqlReq, string) {
	id := fake.sb.Payments(fake.B.biz.APIKey)[0].ID
	return gqlReq{
		Query:     `query BProbe($id: ID!) { payment(id: $id) { id status amount { amount } } }`,
		Variables: map[string]any{"id": id},
		OpName:    "BProbe",
		Header:    fake.B.Header(),
	}, id
}

// probe runs B's query once: its latency, and whether it was right.
func probe(p *proc, q gqlReq, want string, timeout time.Duration) (time.Duration, bool, string) {
	q.Timeout = timeout
	r := p.do(context.Background(), q)
	if r.Outcome() == "timeout" {
		return timeout, false, "timeout"
	}
	ok := r.Outcome() == "ok" && strings.Contains(string(r.Data), want)
	return r.Elapsed, ok, r.Outcome()
}

type loadResult struct {
	probes             []time.Duration
	probeFailed        int
	probeOutcomes      map[string]int
	attackOutcomes     map[string]int
	attackCut          int
	peakGoroutines     int
	goroutineSamples   int
	callsA, callsB     int
	peakA, peakB, peak int
}

// runLoad runs workers of A sending attack for the window while B probes
// one query at a time; attacks still running when the window closes are
// cut (their client hangs up).
func runLoad(p *proc, fake *restFake, attack gqlReq, workers int, sc hostileScale) loadResult {
	res := loadResult{probeOutcomes: map[string]int{}, attackOutcomes: map[string]int{}}
	fake.Reset()
	stopG := p.sampleGoroutines(100 * time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var wg sync.WaitGroup
	attack = attack.encoded()
	attack.Header = fake.A.Header()
	attack.Timeout = sc.loadWindow + sc.probeTimeout + 30*time.Second
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				r := p.do(ctx, attack)
				mu.Lock()
				if ctx.Err() != nil {
					res.attackCut++
				} else {
					res.attackOutcomes[r.Outcome()]++
				}
				mu.Unlock()
			}
		}()
	}
	q, want := probeQuery(fake)
	end := time.Now().Add(sc.loadWindow)
	time.Sleep(200 * time.Millisecond) // let the load build up
	for time.Now().Before(end) {
		d, ok, outcome := probe(p, q, want, sc.probeTimeout)
		res.probes = append(res.probes, d)
		res.probeOutcomes[outcome]++
		if !ok {
			res.probeFailed++
		}
		time.Sleep(20 * time.Millisecond)
	}
	res.peakGoroutines, res.goroutineSamples = stopG()
	res.callsA, res.callsB = fake.CallsBy("A"), fake.CallsBy("B")
	res.peakA, res.peakB, res.peak = fake.PeakBy("A"), fake.PeakBy("B"), fake.Peak()
	cancel()
	wg.Wait()
	return res
}

func item3Starvation(t *testing.T, sc hostileScale, fake *restFake, figs *figures) {
	// MAX_COMPLEXITY is left at its default on purpose: the issue asks
	// that the default refuse the attack and serve the largest documented
	// uses.
	cases := []struct {
		name   string
		attack gqlReq
		// pool is REST_MAX_INFLIGHT; one merchant's share of it is a
		// quarter (the gateway derives it).
		pool int
	}{
		// The attack with the default pools.
		{"A_sends_item3_queries_49x_nodes_100", starvationQuery(), 256},
		// The largest queries the complexity limit lets through. 20 of
		// them want 20 x 16 REST calls at once; with the default pool of
		// 256 that takes more CPU than two busy cores have, and B's
		// latency would measure the CPU, not the REST slots. A pool of 16
		// (as the soak uses) keeps the same excess of demand over the
		// pool (320 wanted) at a CPU cost CI can pay: before the fix B
		// queues behind ~20 rounds of A's calls (~1 s).
		{"A_sends_largest_within_limit_queries_pool_16", withinLimitQuery(fake), 16},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fake.SetLatency(restLatency3)
			perMerchant := tc.pool / 4
			p := startGateway(t, map[string]string{
				"REST_BASE_URL":        fake.URL,
				"REST_MAX_CONCURRENCY": "16",
				"REST_MAX_INFLIGHT":    strconv.Itoa(tc.pool),
				// Off: this item measures the REST limiter under A's
				// load; the rate limits would refuse most of it first.
				"RATE_LIMIT_REST_CALLS_PER_SECOND": "0",
				"RATE_LIMIT_REQUESTS_PER_SECOND":   "0",
			})
			// Two merchants the REST API has accepted: A's refusals are
			// a merchant's, not an anonymous flood's held and shut out
			// at accept with everyone on its address (B's too).
			acceptMerchants(t, p, fake)
			what := strings.ReplaceAll(tc.name, "_", " ")
			q, want := probeQuery(fake)
			var base []time.Duration
			for i := range 22 {
				d, ok, outcome := probe(p, q, want, 5*time.Second)
				if !ok {
					t.Fatalf("B's probe fails with no load: %s", outcome)
				}
				if i >= 2 { // the first two open connections
					base = append(base, d)
				}
			}
			p50 := percentile(base, 50)
			res := runLoad(p, fake, tc.attack, 20, sc)
			p99 := percentile(res.probes, 99)
			bound := probeP99Factor*p50 + probeP99Slack
			figs.info(t, "3", what+": A's answers (20 workers, "+sc.loadWindow.String()+")",
				fmt.Sprintf("%s; %d cut at the end", outcomes(res.attackOutcomes), res.attackCut))
			figs.info(t, "3", what+": REST calls A / B, peak in flight A / B / all (REST latency 50 ms)",
				fmt.Sprintf("%d / %d, %d / %d / %d", res.callsA, res.callsB, res.peakA, res.peakB, res.peak))
			figs.check(t, "3", what+": A's peak REST calls in flight", strconv.Itoa(res.peakA),
				fmt.Sprintf("<= %d (a quarter of REST_MAX_INFLIGHT)", perMerchant), res.peakA <= perMerchant)
			figs.check(t, "3", what+": B's probes",
				fmt.Sprintf("%d: %s", len(res.probes), outcomes(res.probeOutcomes)), "all ok", res.probeFailed == 0)
			figs.check(t, "3", what+": B's p99 under load (unloaded p50 "+ms(p50)+")",
				ms(p99), "< "+ms(bound), len(res.probes) > 0 && p99 < bound)
			g := fmt.Sprintf("%d (%d scrapes of /metrics answered)", res.peakGoroutines, res.goroutineSamples)
			figs.check(t, "3", what+": peak goroutines", g, "< 10,000, at least 2 scrapes",
				res.goroutineSamples >= 2 && res.peakGoroutines < maxGoroutines)
			rssFigure(t, figs, "3", what, p)
		})
	}
}

// ---- item 4 ----

func item4ListLimits(t *testing.T, sc hostileScale, fake *restFake, figs *figures) {
	fake.SetLatency(restLatency3)
	// limit calls per request and per merchant: the merchant's share is
	// a quarter of REST_MAX_INFLIGHT.
	const limit = 2
	p := startGateway(t, map[string]string{
		"REST_BASE_URL":        fake.URL,
		"REST_MAX_CONCURRENCY": strconv.Itoa(limit),
		"REST_MAX_INFLIGHT":    strconv.Itoa(4 * limit),
	})
	ctx := context.Background()
	// 20 distinct lists: one edge after each of the first 20 edges.
	r := p.do(ctx, gqlReq{Query: `{ payments(first: 20) { edges { cursor } } }`, Header: fake.A.Header()})
	var first struct {
		Payments struct{ Edges []struct{ Cursor string } }
	}
	if r.Outcome() != "ok" || json.Unmarshal(r.Data, &first) != nil || len(first.Payments.Edges) != 20 {
		t.Fatalf("20 cursors: %s %s", r.Outcome(), r.Body)
	}
	var distinct strings.Builder
	distinct.WriteString("{")
	for i, e := range first.Payments.Edges {
		fmt.Fprintf(&distinct, " p%d: payments(first: 1, after: %q) { nodes { id } }", i, e.Cursor)
	}
	distinct.WriteString(" }")
	var zeros strings.Builder
	zeros.WriteString("{")
	for i := range 300 {
		fmt.Fprintf(&zeros, " z%d: payments(first: 0) { pageInfo { hasNextPage } }", i)
	}
	zeros.WriteString(" }")
	cases := []struct {
		name     string
		query    string
		maxCalls int
	}{
		{"20_aliased_lists_after_20_cursors", distinct.String(), 20},
		{"300_aliases_of_payments_first_0", zeros.String(), 1},
		{"3_identical_payments_first_5", `{ a: payments(first: 5) { nodes { id } } b: payments(first: 5) { nodes { id } } c: payments(first: 5) { nodes { id } } }`, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fake.Reset()
			r := p.do(ctx, gqlReq{Query: tc.query, Header: fake.A.Header()})
			what := strings.ReplaceAll(tc.name, "_", " ")
			figs.check(t, "4", what+": answer", r.Outcome(), "ok", r.Outcome() == "ok")
			calls, peak := fake.Calls(nil), fake.Peak()
			figs.check(t, "4", what+": REST calls", strconv.Itoa(calls), fmt.Sprintf("1..%d", tc.maxCalls), calls >= 1 && calls <= tc.maxCalls)
			figs.check(t, "4", what+": peak REST calls in flight", strconv.Itoa(peak), fmt.Sprintf("<= %d (REST_MAX_CONCURRENCY, a quarter of REST_MAX_INFLIGHT)", limit), peak <= limit)
		})
	}
}

// ---- item 5 ----

const paymentFields = `id status amount { amount paisa currency } transactionId paymentMethod customer { name email phone city } createdAt updatedAt`

func item5Complexity(t *testing.T, sc hostileScale, fake *restFake, figs *figures) {
	// MAX_COMPLEXITY at its default: the issue asks the default to serve
	// every documented use and to refuse item 3's queries. Its 220 KB
	// body (4,900 ids in variables) is over the default MAX_BODY_BYTES,
	// which refuses it before decoding (item 3 measures that): the body
	// limit is raised here so that the complexity estimate is what
	// refuses it.
	p := startGateway(t, map[string]string{"REST_BASE_URL": fake.URL, "MAX_BODY_BYTES": "262144"})
	pays := fake.sb.Payments(fake.A.biz.APIKey)
	sessions := fake.sb.CheckoutSessions(fake.A.biz.APIKey)
	ids := make([]string, 100)
	for i := range ids {
		ids[i] = pays[100+i].ID
	}
	list := func(alias, args string) string {
		return fmt.Sprintf(`%s: payments(%s) { edges { cursor node { %s } } nodes { %s } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } }`,
			alias, args, paymentFields, paymentFields)
	}
	starve := starvationQuery()
	cases := []struct {
		name      string
		q         gqlReq
		want      string
		wantCalls func(int) bool
		bound     string
	}{
		{"two_full_100_item_lists", gqlReq{Query: "{ " + list("all", "first: 100") + " " + list("succeeded", "first: 100, status: SUCCEEDED") + " }"},
			"ok", func(n int) bool { return n == 2 }, "ok, 2 REST calls"},
		{"documented_uses_in_one_query", gqlReq{
			Query: `query Uses($ids: [ID!]!, $cs: String!) {
  payments(first: 100) { nodes { ` + paymentFields + ` customer { address } } pageInfo { endCursor } }
  nodes(ids: $ids) { id ... on Payment { status } }
  checkoutSession(id: $cs) { sessionId amount { amount } payment { id status } }
}`,
			Variables: map[string]any{"ids": ids, "cs": sessions[0].Reference}},
			"ok", func(n int) bool { return n > 0 }, "ok"},
		{"item3_query_49x_nodes_100", starve, "COMPLEXITY_LIMIT_EXCEEDED", func(n int) bool { return n == 0 },
			"COMPLEXITY_LIMIT_EXCEEDED, 0 REST calls"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fake.Reset()
			tc.q.Header = fake.A.Header()
			r := p.do(context.Background(), tc.q)
			what := strings.ReplaceAll(tc.name, "_", " ")
			got := fmt.Sprintf("%s, %d REST calls", r.Outcome(), fake.Calls(nil))
			if r.Outcome() != "ok" && len(r.Errors) > 0 {
				got += " (" + r.Errors[0].Message + ")"
			}
			figs.check(t, "5", what, got, tc.bound, r.Outcome() == tc.want && tc.wantCalls(fake.Calls(nil)))
		})
	}
}

// ---- item 6 ----

// forgeCursor builds a cursor in the gateway's unkeyed format of today
// (version 1, status 0, skip 0, the REST cursor, then the first 4 bytes of
// its sha256): what anyone who reads the source can make. Once cursors are
// keyed, the gateway must refuse it without a REST call.
func forgeCursor(restCursor string) string {
	b := append([]byte{1, 0, 0}, restCursor...)
	sum := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(append(b, sum[:4]...))
}

func item6Breaker(t *testing.T, sc hostileScale, fake *restFake, figs *figures) {
	const forged = "forged-by-e2e"
	bad := fake.sb.Payments(fake.A.biz.APIKey)[:6]
	var aliases strings.Builder
	aliases.WriteString("{")
	badIDs := make([]string, len(bad))
	for i, p := range bad {
		badIDs[i] = p.ID
		fmt.Fprintf(&aliases, " p%d: payment(id: %q) { id }", i, p.ID)
	}
	aliases.WriteString(" }")
	cases := []struct {
		name     string
		arm      func()
		attack   string
		requests int
	}{
		{"six_ids_the_REST_API_answers_500", func() { fake.FailIDs(sandbox.Fault500, badIDs...) }, aliases.String(), 3},
		{"six_ids_that_hang_past_REST_TIMEOUT", func() { fake.FailIDs(sandbox.FaultHang, badIDs...) }, aliases.String(), 3},
		{"forged_cursor_the_REST_API_answers_500", func() {
			fake.Fail(func(c restCall) sandbox.Fault {
				if c.Route == sandbox.RoutePayments && c.Cursor == forged {
					return sandbox.Fault500
				}
				return sandbox.FaultNone
			})
		}, fmt.Sprintf(`{ payments(first: 5, after: %q) { nodes { id } } }`, forgeCursor(forged)), breakerFailures + 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fake.Reset()
			fake.Fail(nil)
			p := startGateway(t, map[string]string{
				"REST_BASE_URL":    fake.URL,
				"BREAKER_FAILURES": strconv.Itoa(breakerFailures),
				"REST_TIMEOUT":     "300ms",
			})
			acceptMerchants(t, p, fake)
			tc.arm()
			defer fake.Fail(nil)
			what := strings.ReplaceAll(tc.name, "_", " ")
			attackOut := map[string]int{}
			for range tc.requests {
				r := p.do(context.Background(), gqlReq{Query: tc.attack, Header: fake.A.Header(), Timeout: 10 * time.Second})
				attackOut[r.Outcome()]++
			}
			figs.info(t, "6", what+": A's answers", outcomes(attackOut))
			if strings.HasPrefix(tc.name, "forged") {
				n := fake.Calls(func(c restCall) bool { return c.Cursor == forged })
				figs.check(t, "6", what+": REST calls with the forged cursor", strconv.Itoa(n), "0", n == 0)
			}
			// B, right after: a payment and a list, ten times each.
			q, want := probeQuery(fake)
			okN, total, firstErr := 0, 0, ""
			for range 10 {
				for _, req := range []gqlReq{q, {Query: `{ payments(first: 2) { nodes { id } } }`, Header: fake.B.Header()}} {
					req.Timeout = 5 * time.Second
					r := p.do(context.Background(), req)
					total++
					if r.Outcome() == "ok" && (req.Variables == nil || strings.Contains(string(r.Data), want)) {
						okN++
					} else if firstErr == "" {
						firstErr = r.Outcome()
						if len(r.Errors) > 0 {
							firstErr += ": " + r.Errors[0].Message
						}
					}
				}
			}
			got := fmt.Sprintf("%d/%d ok", okN, total)
			if firstErr != "" {
				got += " (first failure " + firstErr + ")"
			}
			figs.check(t, "6", what+": B's queries right after", got, "all ok", okN == total)
		})
	}
}

// ---- item 7 ----

func item7Bodies(t *testing.T, sc hostileScale, fake *restFake, figs *figures) {
	env := map[string]string{
		"REST_BASE_URL":       fake.URL,
		"REST_MAX_BODY_BYTES": "65536",
		"MAX_RESPONSE_BYTES":  strconv.Itoa(4 << 20),
	}
	pays := fake.sb.Payments(fake.A.biz.APIKey)
	ids := make([]string, 100)
	for i := range ids {
		ids[i] = pays[i].ID
	}
	nodes := gqlReq{Query: `query N($ids: [ID!]!) { nodes(ids: $ids) { id ... on Payment { customer { name } } } }`,
		Variables: map[string]any{"ids": ids}}
	endless := func(c restCall) http.HandlerFunc { return fake.endlessBody(c) }
	cases := []struct {
		name     string
		override func(restCall) http.HandlerFunc
		q        gqlReq
		conc     int
		want     string
	}{
		{fmt.Sprintf("%d_concurrent_nodes_100_endless_bodies", sc.bodyConc), endless, nodes, sc.bodyConc, "UPSTREAM_ERROR"},
		{"list_page_with_endless_body", endless, gqlReq{Query: `{ payments(first: 100) { nodes { id } } }`}, 1, "UPSTREAM_ERROR"},
		{"one_1MiB_valid_record", fake.paddedPayment(1 << 20),
			gqlReq{Query: fmt.Sprintf(`{ payment(id: %q) { id customer { name } } }`, ids[0])}, 1, "UPSTREAM_ERROR"},
		{fmt.Sprintf("%d_concurrent_nodes_100_of_60KB_valid_records", sc.bodyConc), fake.paddedPayment(60 << 10), nodes, sc.bodyConc, "RESPONSE_TOO_LARGE"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fake.Reset()
			p := startGateway(t, env)
			acceptMerchants(t, p, fake)
			fake.Override(tc.override)
			defer fake.Override(nil)
			what := strings.ReplaceAll(tc.name, "_", " ")
			var mu sync.Mutex
			got := map[string]int{}
			var maxSize int64
			var maxTime time.Duration
			var wg sync.WaitGroup
			for range tc.conc {
				wg.Add(1)
				go func() {
					defer wg.Done()
					q := tc.q
					q.Header, q.Timeout = fake.A.Header(), 60*time.Second
					r := p.do(context.Background(), q)
					mu.Lock()
					defer mu.Unlock()
					code := r.Outcome()
					if r.HasCode(tc.want) {
						code = tc.want
					}
					got[code]++
					maxSize, maxTime = max(maxSize, r.Size), max(maxTime, r.Elapsed)
				}()
			}
			wg.Wait()
			figs.check(t, "7", what+": answers", outcomes(got), "all "+tc.want, got[tc.want] == tc.conc)
			figs.info(t, "7", what+": largest answer, slowest answer, REST body bytes sent",
				fmt.Sprintf("%s, %s, %s", kib(maxSize), ms(maxTime), mib(fake.Served())))
			if tc.want == "RESPONSE_TOO_LARGE" {
				figs.check(t, "7", what+": largest answer", kib(maxSize), "<= MAX_RESPONSE_BYTES (4 MiB)", maxSize <= 4<<20)
			}
			rssFigure(t, figs, "7", what, p)
		})
	}
}

// ---- item 8 ----

func item8NoStore(t *testing.T, sc hostileScale, fake *restFake, figs *figures) {
	p := startGateway(t, map[string]string{"REST_BASE_URL": fake.URL})
	id := fake.sb.Payments(fake.A.biz.APIKey)[0].ID
	q := fmt.Sprintf(`{ payment(id: %q) { id status } }`, id)
	for _, get := range []bool{true, false} {
		name := "POST"
		if get {
			name = "GET"
		}
		t.Run(name, func(t *testing.T) {
			r := p.do(context.Background(), gqlReq{Query: q, GET: get, Header: fake.A.Header()})
			if r.Outcome() != "ok" {
				t.Fatalf("%s: %s %s", name, r.Outcome(), r.Body)
			}
			cc, vary := r.Header.Values("Cache-Control"), r.Header.Values("Vary")
			ccs, varys := strings.ToLower(strings.Join(cc, ", ")), strings.ToLower(strings.Join(vary, ", "))
			figs.check(t, "8", name+" /graphql with credentials: Cache-Control", fmt.Sprintf("%q", strings.Join(cc, ", ")),
				"no-store", strings.Contains(ccs, "no-store"))
			figs.check(t, "8", name+" /graphql with credentials: Vary", fmt.Sprintf("%q", strings.Join(vary, ", ")),
				"x-api-key and x-api-secret", strings.Contains(varys, "x-api-key") && strings.Contains(varys, "x-api-secret"))
		})
	}
}

// ---- item 9 ----

func item9Smaller(t *testing.T, sc hostileScale, fake *restFake, figs *figures) {
	ctx := context.Background()
	pays := fake.sb.Payments(fake.A.biz.APIKey)
	t.Run("own_secret_as_operation_name_and_request_id", func(t *testing.T) {
		p := startGateway(t, map[string]string{"REST_BASE_URL": fake.URL})
		// Served or refused, either is fine: what matters is where the
		// name goes.
		got := map[string]int{}
		for _, name := range []string{fake.A.Secret, fake.A.Key} {
			h := fake.A.Header()
			h.Set("X-Request-Id", name)
			r := p.do(ctx, gqlReq{Query: fmt.Sprintf(`query %s { payment(id: %q) { id } }`, name, pays[0].ID), OpName: name, Header: h})
			got[r.Outcome()]++
		}
		figs.info(t, "9", "operations named after the caller's key and secret: answers", outcomes(got))
		h := fake.A.Header()
		h.Set("X-Request-Id", "e2e-sentinel-item9")
		p.do(ctx, gqlReq{Query: `query Sentinel { __typename }`, Header: h})
		if !p.waitForOutput("e2e-sentinel-item9", 5*time.Second) {
			t.Fatalf("no access log line for the sentinel request:\n%s", p.Output())
		}
		logs, metrics := p.Output(), p.Metrics()
		inLog := strings.Count(logs, fake.A.Secret) + strings.Count(logs, fake.A.Key)
		figs.check(t, "9", "the caller's key or secret in the log (as operation name and X-Request-Id)",
			fmt.Sprintf("%d times", inLog), "0", inLog == 0)
		m := strings.Count(metrics, fake.A.Secret) + strings.Count(metrics, fake.A.Key)
		figs.check(t, "9", "the caller's key or secret in /metrics", fmt.Sprintf("%d times", m), "0", m == 0)
	})
	t.Run("105_junk_operation_names_then_a_real_one", func(t *testing.T) {
		// The anonymous budgets off: the junk comes from one address, and
		// its names must reach the label cap rather than refusals held a
		// second each. The real operation's pair is not accepted until its
		// REST call, so with the shared budget on it would take whatever
		// token the junk left, or be refused: a race, not the point here.
		p := startGateway(t, map[string]string{"REST_BASE_URL": fake.URL,
			"RATE_LIMIT_ANONYMOUS_PER_ADDRESS_PER_SECOND": "0", "RATE_LIMIT_ANONYMOUS_PER_SECOND": "0"})
		for i := range 105 {
			p.do(ctx, gqlReq{Query: fmt.Sprintf(`query Junk%d { __typename }`, i)}) // no credentials
		}
		r := p.do(ctx, gqlReq{Query: fmt.Sprintf(`query RealDashboard { payment(id: %q) { id } }`, pays[0].ID), Header: fake.A.Header()})
		if r.Outcome() != "ok" {
			t.Fatalf("real operation: %s %s", r.Outcome(), r.Body)
		}
		metrics := p.Metrics()
		labelled := strings.Contains(metrics, `operation="RealDashboard"`)
		figs.check(t, "9", "real operation after 105 unauthenticated junk names: own metric label",
			strconv.FormatBool(labelled), "true", labelled)
	})
	t.Run("duplicate_x_api_key", func(t *testing.T) {
		p := startGateway(t, map[string]string{"REST_BASE_URL": fake.URL})
		fake.Reset()
		h := fake.A.Header()
		h.Add("x-api-key", fake.B.Key)
		r := p.do(ctx, gqlReq{Query: fmt.Sprintf(`{ payment(id: %q) { id } }`, pays[0].ID), Header: h})
		refused := r.HasCode("UNAUTHENTICATED") || r.HasCode("BAD_USER_INPUT")
		figs.check(t, "9", "two x-api-key headers: answer, REST calls",
			fmt.Sprintf("%s, %d", r.Outcome(), fake.Calls(nil)), "UNAUTHENTICATED or BAD_USER_INPUT, 0", refused && fake.Calls(nil) == 0)
	})
	t.Run("REST_record_with_another_id", func(t *testing.T) {
		p := startGateway(t, map[string]string{"REST_BASE_URL": fake.URL})
		fake.Override(fake.otherRecord(pays[0].ID, pays[1].ID))
		defer fake.Override(nil)
		r := p.do(ctx, gqlReq{Query: fmt.Sprintf(`{ payment(id: %q) { id status } }`, pays[0].ID), Header: fake.A.Header()})
		leaked := strings.Contains(string(r.Data), pays[1].ID)
		figs.check(t, "9", "REST answers payment X with payment Y's record",
			fmt.Sprintf("%s, Y's id in the answer: %v", r.Outcome(), leaked), "UPSTREAM_ERROR, false", r.HasCode("UPSTREAM_ERROR") && !leaked)
	})
	t.Run("REST_next_cursor_that_does_not_advance", func(t *testing.T) {
		p := startGateway(t, map[string]string{"REST_BASE_URL": fake.URL})
		fake.Override(fake.stuckCursor)
		defer fake.Override(nil)
		fake.Reset()
		// The first page is short (3 of 10): the walk stops at the pages
		// it estimated (issue 26: made never passes the estimate) and
		// answers hasNextPage with an end cursor. Following that cursor
		// sends the REST cursor the fake then answers again as next.
		first := p.do(ctx, gqlReq{Query: `{ payments(first: 10) { nodes { id } pageInfo { hasNextPage endCursor } } }`, Header: fake.A.Header()})
		var page struct {
			Payments struct{ PageInfo struct{ EndCursor string } }
		}
		if err := json.Unmarshal(first.Data, &page); err != nil || page.Payments.PageInfo.EndCursor == "" {
			t.Fatalf("first page: %s %v", first.Outcome(), err)
		}
		r := p.do(ctx, gqlReq{Query: `query($after: String) { payments(first: 10, after: $after) { nodes { id } } }`,
			Variables: map[string]any{"after": page.Payments.PageInfo.EndCursor}, Header: fake.A.Header()})
		figs.check(t, "9", "REST next_cursor equal to the cursor sent",
			fmt.Sprintf("%s, %d REST calls", r.Outcome(), fake.Calls(nil)), "UPSTREAM_ERROR", r.HasCode("UPSTREAM_ERROR"))
	})
}
