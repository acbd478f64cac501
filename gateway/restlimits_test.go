package gateway_test

// The REST limiter end to end (issue 11, items 3 and 4): every REST call,
// lists included, holds a slot of its request, its merchant and the
// process; no goroutine is started for a call before it has its slot; and
// identical list calls within one request are made once. The REST API
// here counts its calls and records how many were in flight at once,
// overall and per credential pair.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"paygraph/internal/gqltest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"paygraph/sandbox"
)

// peakREST is a REST API that answers any payment id it is asked for (and
// lists of `limit` payments), holding each call until its gate lets it go.
type peakREST struct {
	mu       sync.Mutex
	calls    int
	inFlight int
	peak     int
	byPair   map[string]*pairCount
	// gate, when set, holds every call of a pair until it returns (it is
	// given the caller's x-api-key).
	gate func(key string)
}

type pairCount struct{ calls, inFlight, peak int }

func newPeakREST() *peakREST { return &peakREST{byPair: map[string]*pairCount{}} }

func (p *peakREST) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("X-Api-Key")
	pair := key + "\x00" + r.Header.Get("X-Api-Secret")
	p.mu.Lock()
	pc := p.byPair[pair]
	if pc == nil {
		pc = &pairCount{}
		p.byPair[pair] = pc
	}
	p.calls++
	p.inFlight++
	p.peak = max(p.peak, p.inFlight)
	pc.calls++
	pc.inFlight++
	pc.peak = max(pc.peak, pc.inFlight)
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.inFlight--
		pc.inFlight--
		p.mu.Unlock()
	}()
	if p.gate != nil {
		p.gate(key)
	}
	w.Header().Set("Content-Type", "application/json")
	if id, ok := strings.CutPrefix(r.URL.Path, "/api/v1/payments/"); ok {
		_, _ = w.Write(limitsPaymentJSON(id))
		return
	}
	n, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	items := make([]json.RawMessage, max(n, 1))
	for i := range items {
		items[i] = limitsPaymentJSON(fmt.Sprintf("pay_prod_%032x", i))
	}
	body, _ := json.Marshal(map[string]any{"data": items, "has_more": false, "next_cursor": nil})
	_, _ = w.Write(body)
}

func limitsPaymentJSON(id string) []byte {
	return []byte(`{"id":"` + id + `","status":"SUCCEEDED","amount":10.50,"currency":"BDT","customer":{"name":"A","email":"a@example.com","phone":"017"},` +
		`"created_at":"2026-11-21T09:30:00.000Z","updated_at":"2026-11-21T09:30:00.000Z"}`)
}

// counts returns the calls and the peak in flight, overall and for the
// pair whose key is key ("" for none).
func (p *peakREST) counts(key string) (calls, peak, pairCalls, pairPeak int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for pair, pc := range p.byPair {
		if k, _, _ := strings.Cut(pair, "\x00"); k == key {
			pairCalls, pairPeak = pc.calls, pc.peak
		}
	}
	return p.calls, p.peak, pairCalls, pairPeak
}

func (p *peakREST) pairInFlight(key string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for pair, pc := range p.byPair {
		if k, _, _ := strings.Cut(pair, "\x00"); k == key {
			return pc.inFlight
		}
	}
	return 0
}

var (
	merchantA = sandbox.Business{APIKey: "ak_test_merchant_a", APISecret: "sk_test_merchant_a"}
	merchantB = sandbox.Business{APIKey: "ak_test_merchant_b", APISecret: "sk_test_merchant_b"}
)

// aliases repeats field n times under aliases a0..a(n-1); %d in field is
// the alias's number.
func aliases(n int, field string) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		fmt.Fprintf(&b, " a%d: ", i)
		if strings.Contains(field, "%d") {
			fmt.Fprintf(&b, field, i+1)
		} else {
			b.WriteString(field)
		}
	}
	b.WriteString(" }")
	return b.String()
}

func TestRESTLimitsCoverLists(t *testing.T) {
	for _, tc := range []struct {
		name      string
		query     string
		wantCalls int
		wantPeak  int // at most
	}{
		{"20 aliased payments(first: 1) are one call", aliases(20, `payments(first: 1) { nodes { id } }`), 1, 1},
		{"20 distinct lists hold at most 2 slots", aliases(20, `payments(first: %d) { nodes { id } }`), 20, 2},
		{"300 aliases of payments(first: 0) are one call", aliases(300, `payments(first: 0) { pageInfo { hasNextPage } }`), 1, 1},
		{"three identical payments(first: 5) are one call", aliases(3, `payments(first: 5) { edges { cursor node { id } } }`), 1, 1},
		{"lists and details share the bound", `{ payments(first: 10) { nodes { id customer { address } } } b: payments(first: 7) { nodes { id } } }`, 12, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rest := newPeakREST()
			// Calls overlap unless the limiter stops them: each one takes
			// a little while (the assertion is on counts, not on time).
			rest.gate = func(string) { time.Sleep(5 * time.Millisecond) }
			g := startGateway(t, setup{env: map[string]string{"REST_MAX_CONCURRENCY": "2", "REST_MAX_INFLIGHT": "2"}, rest: rest})
			r := g.Post(t, creds(merchantA), tc.query, nil)
			r.WantNoErrors(t)
			calls, peak, _, _ := rest.counts("")
			t.Logf("%d REST calls, at most %d at once", calls, peak)
			if calls != tc.wantCalls {
				t.Errorf("%d REST calls, want %d", calls, tc.wantCalls)
			}
			if peak > tc.wantPeak {
				t.Errorf("%d REST calls at once, want at most %d", peak, tc.wantPeak)
			}
		})
	}
}

// TestRESTLimitPerMerchant: merchant A saturating a slow REST API never
// holds more than its share of the process pool at once, and merchant B's
// single call is served while A's calls are all still waiting on the REST
// API (B's call starts without waiting for any of A's to finish).
func TestRESTLimitPerMerchant(t *testing.T) {
	const perMerchant = 2
	rest := newPeakREST()
	releaseA := make(chan struct{})
	rest.gate = func(key string) {
		if key == merchantA.APIKey {
			<-releaseA
		}
	}
	// A's requests ask for the same records: unshared, so that each
	// makes all its calls (TestRESTFaultsNeverCrossPairs shares them).
	g := startGateway(t, setup{env: map[string]string{"REST_MAX_INFLIGHT": "4",
		"Config.RESTMaxInFlightPerMerchant": strconv.Itoa(perMerchant), "REST_MAX_CONCURRENCY": "16", "REST_SHARE_CALLS": "false"}, rest: rest})
	var once sync.Once
	unblock := func() { once.Do(func() { close(releaseA) }) }
	t.Cleanup(unblock) // before the servers close

	ids := make([]string, 10)
	for i := range ids {
		ids[i] = fmt.Sprintf("%q", fmt.Sprintf("pay_prod_a%031x", i))
	}
	const requestsOfA = 4
	var wg sync.WaitGroup
	answersA := make([]*gqltest.Response, requestsOfA)
	for i := range requestsOfA {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q := fmt.Sprintf(`{ nodes(ids: [%s]) { id } p: payments(first: %d) { nodes { id } } }`, strings.Join(ids, ","), i+1)
			answersA[i] = postCtx(context.Background(), t, g.URL, creds(merchantA), q)
		}()
	}
	waitFor(t, func() bool { return rest.pairInFlight(merchantA.APIKey) >= perMerchant })

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r := postCtx(ctx, t, g.URL, creds(merchantB), `{ payment(id: "pay_prod_b0000000000000000000000000000001") { id } }`)
	if r == nil {
		t.Fatal("merchant B was not served while merchant A saturated its share (no answer in 10s)")
	}
	r.WantNoErrors(t)
	if n := rest.pairInFlight(merchantA.APIKey); n != perMerchant {
		t.Fatalf("A has %d calls in flight while B was served, want %d still waiting on the REST API", n, perMerchant)
	}
	unblock()
	wg.Wait()
	for i, r := range answersA {
		if r == nil {
			t.Fatalf("A's request %d got no GraphQL answer", i)
		}
		r.WantNoErrors(t)
	}
	calls, peak, callsA, peakA := rest.counts(merchantA.APIKey)
	_, _, callsB, peakB := rest.counts(merchantB.APIKey)
	t.Logf("%d REST calls (A %d, B %d); at most %d at once (A %d, B %d)", calls, callsA, callsB, peak, peakA, peakB)
	if want := requestsOfA * (len(ids) + 1); callsA != want || callsB != 1 {
		t.Errorf("calls: A %d (want %d), B %d (want 1)", callsA, want, callsB)
	}
	if peakA > perMerchant {
		t.Errorf("A had %d calls at once, more than its %d", peakA, perMerchant)
	}
}

// postCtx posts query and returns its answer, or nil when ctx ended
// first (or the answer was not GraphQL: an error then). It may be called
// from any goroutine.
func postCtx(ctx context.Context, t *testing.T, url string, h http.Header, query string) *gqltest.Response {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/graphql", bytes.NewReader(body))
	req.Header = h.Clone()
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			t.Error(err)
		}
		return nil
	}
	defer resp.Body.Close()
	out := &gqltest.Response{Status: resp.StatusCode}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Error(err)
		return nil
	}
	return out
}

// TestRESTLimitNoGoroutineBeforeSlot: while nodes(ids: [100 ids]) waits on
// a REST API that holds every call, at REST_MAX_CONCURRENCY=2, the
// gateway holds a few goroutines more than the two calls in flight, not
// one per id (before the limiter: over 100).
func TestRESTLimitNoGoroutineBeforeSlot(t *testing.T) {
	rest := newPeakREST()
	release := make(chan struct{})
	rest.gate = func(string) { <-release }
	g := startGateway(t, setup{env: map[string]string{"REST_MAX_CONCURRENCY": "2"}, rest: rest})
	ids := make([]string, 100)
	for i := range ids {
		ids[i] = fmt.Sprintf("%q", fmt.Sprintf("pay_prod_%032x", i))
	}
	q := `{ nodes(ids: [` + strings.Join(ids, ",") + `]) { id } }`
	g.Post(t, creds(merchantA), `{ __typename }`, nil) // warm: connections
	base := runtime.NumGoroutine()
	done := make(chan *gqltest.Response)
	go func() { done <- g.Post(t, creds(merchantA), q, nil) }()
	waitFor(t, func() bool { return rest.pairInFlight(merchantA.APIKey) == 2 })
	// Let anything that would start do so before counting.
	for range 100 {
		runtime.Gosched()
	}
	delta := runtime.NumGoroutine() - base
	close(release)
	r := <-done
	r.WantNoErrors(t)
	calls, peak, _, _ := rest.counts("")
	t.Logf("%d more goroutines while 2 calls were in flight; %d REST calls, at most %d at once", delta, calls, peak)
	// 2 calls in flight cost about 8 goroutines of HTTP plumbing (client
	// and server connections of both the GraphQL request and the REST
	// calls) plus the resolver's and the loader's.
	if delta >= 40 {
		t.Errorf("%d more goroutines while 2 REST calls were in flight, want < 40", delta)
	}
	if calls != 100 || peak > 2 {
		t.Errorf("%d REST calls (want 100), at most %d at once (want <= 2)", calls, peak)
	}
}
