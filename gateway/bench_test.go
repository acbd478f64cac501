package gateway_test

// Hot-path benchmarks of the whole /graphql handler (issue 6) and the
// batching benchmark of issue 3. Figures and commands: docs/perf-log/2026-11-benchmarks.md.
//
//	go test -run '^$' -bench 'SinglePayment|List100|Aliases20|Checkout|StubTransport' -benchmem .
//	go test -run '^$' -bench ListWithAddresses20ms -benchtime 20x .
//	go test -run TestAllocationBudget .
//
// The stub REST transport answers from canned sandbox bodies without a
// network, so what is measured is the gateway: chi, the access log, CORS,
// body limits, gqlgen (APQ, query cache, limits, complexity, execution,
// response writing), the loaders and the REST client with its JSON
// decoding. BenchmarkStubTransport measures the stub alone, to subtract.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"paygraph/internal/testenv"
	"paygraph/sandbox"
)

// Allocation budgets per operation of the stub-transport benchmarks,
// the stub's own allocations excluded: the figures of docs/perf-log/2026-11-benchmarks.md.
// TestAllocationBudget fails when a path exceeds its budget by more than
// benchAllocHeadroom. Lower them when an optimisation lands; raise them
// only with a reason in docs/performance.md. Each includes ~17 allocations of
// the in-memory request and recorder.
const (
	benchBudgetSinglePayment            = 92   // one payment by a variable id, with its address
	benchBudgetList100                  = 158  // a 100-item page without addresses
	benchBudgetAliases20                = 92   // 20 aliases of payment(id:) over one variable id
	benchBudgetCheckout                 = 433  // a checkout session and its payment: 2 REST calls
	benchBudgetSinglePaymentAPQ         = 101  // the single payment by its APQ hash
	benchBudgetList50Addr               = 629  // a 50-item page with each address: 51 REST calls
	benchBudgetSinglePaymentRateLimited = 100  // the single payment with the merchant's rate limits on
	benchAllocHeadroom                  = 0.03 // run-to-run jitter is 2-4 allocations (goroutine scheduling)
)

const (
	benchSingleQuery = `query Pay($id: ID!) { payment(id: $id) { id status amount { amount paisa currency } customer { name email address } createdAt } }`
	benchList100     = `{ payments(first: 100) { nodes { id status amount { amount paisa currency } customer { name email } createdAt } pageInfo { hasNextPage endCursor } } }`
	benchList50Addr  = `{ payments(first: 50) { nodes { customer { address } } } }` // go run ./bench's list50addr
	benchCheckout    = `query S($id: String!) { checkoutSession(id: $id) { sessionId paymentStatus amount { amount } subtotal { amount } metadata { key value } payment { id status amount { amount } customer { address } } } }`
)

func benchAliasesQuery(n int) string {
	var b strings.Builder
	b.WriteString("query A($id: ID!) {")
	for i := 0; i < n; i++ {
		b.WriteString(" p")
		b.WriteString(string(rune('a'+i%26)) + string(rune('a'+i/26)))
		b.WriteString(": payment(id: $id) { id status amount { amount currency } customer { name } }")
	}
	b.WriteString(" }")
	return b.String()
}

// benchStub is a REST transport with no network: canned sandbox bodies
// by URL path (the list path answers one 100-item page).
type benchStub struct {
	bodies map[string][]byte
	pages  map[string][]byte // list pages by their query, before bodies' one page
	header http.Header
}

// benchBody is the stub's response body: one allocation per call.
type benchBody struct{ bytes.Reader }

func (*benchBody) Close() error { return nil }

func (s *benchStub) RoundTrip(r *http.Request) (*http.Response, error) {
	b, ok := s.pages[r.URL.RawQuery]
	if !ok || r.URL.Path != "/api/v1/payments" {
		b, ok = s.bodies[r.URL.Path]
	}
	status := http.StatusOK
	if !ok {
		b, status = []byte(`{"error":"Not found"}`), http.StatusNotFound
	}
	body := &benchBody{}
	body.Reset(b)
	return &http.Response{StatusCode: status, Header: s.header, Body: body,
		ContentLength: int64(len(b)), Request: r, ProtoMajor: 1, ProtoMinor: 1}, nil
}

// benchFixture is the data the benchmarks query: the sandbox's first
// business with one payment and one checkout session.
type benchFixture struct {
	sb        *sandbox.Server
	biz       sandbox.Business
	paymentID string
	sessionID string // a checkout session's reference
	stub      *benchStub
}

func newBenchFixture(t testing.TB) *benchFixture {
	t.Helper()
	sb := sandbox.New(sandbox.Options{})
	f := &benchFixture{sb: sb, biz: sb.Businesses()[0]}
	f.paymentID = sb.Payments(f.biz.APIKey)[0].ID
	sess := sb.CheckoutSessions(f.biz.APIKey)[0]
	f.sessionID = sess.Reference
	f.stub = &benchStub{bodies: map[string][]byte{}, header: http.Header{"Content-Type": {"application/json"}}}
	for _, p := range []string{
		"/api/v1/payments/" + f.paymentID,
		"/api/v1/payments/" + sess.PaymentID,
		"/api/v1/checkout/sessions/" + sess.Reference,
		"/api/v1/payments?limit=100",
	} {
		req := httptest.NewRequest(http.MethodGet, p, nil)
		req.Header.Set("x-api-key", f.biz.APIKey)
		req.Header.Set("x-api-secret", f.biz.APISecret)
		rec := httptest.NewRecorder()
		sb.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("sandbox %s: %d %s", p, rec.Code, rec.Body)
		}
		f.stub.bodies[req.URL.Path] = rec.Body.Bytes()
	}
	// The 50-item page of benchList50Addr, and its items' details.
	f.stub.pages = map[string][]byte{}
	page := f.sandboxGet(t, "/api/v1/payments?limit=50")
	f.stub.pages["limit=50"] = page
	var items struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(page, &items); err != nil || len(items.Data) != 50 {
		t.Fatalf("the 50-item page: %d items, %v", len(items.Data), err)
	}
	for _, it := range items.Data {
		f.stub.bodies["/api/v1/payments/"+it.ID] = f.sandboxGet(t, "/api/v1/payments/"+it.ID)
	}
	return f
}

// sandboxGet is the fixture business's answer to GET path.
func (f *benchFixture) sandboxGet(t testing.TB, path string) []byte {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Header.Set("x-api-key", f.biz.APIKey)
	req.Header.Set("x-api-secret", f.biz.APISecret)
	rec := httptest.NewRecorder()
	f.sb.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("sandbox %s: %d %s", path, rec.Code, rec.Body)
	}
	return rec.Body.Bytes()
}

// benchStubGateway is newGateway, with the default settings, on the stub
// REST transport: the whole HTTP surface (access log, metrics, CORS guard,
// /graphql) is measured, the access line written as the binary writes it
// (NewLogger, JSON at info) to a writer that keeps nothing.
func benchStubGateway(t testing.TB, rt http.RoundTripper) http.Handler {
	return benchGateway(t, rt, unlimitedDefaults)
}

// benchRateLimitedGateway is benchStubGateway with the merchant's rate
// limits on, so high that no request is refused, the request budget the
// tighter of the two (as at the defaults): the RateLimit headers are
// written.
func benchRateLimitedGateway(t testing.TB, rt http.RoundTripper) http.Handler {
	env := map[string]string{"RATE_LIMIT_REQUESTS_PER_SECOND": "1000000", "RATE_LIMIT_REST_CALLS_PER_SECOND": "10000000"}
	return benchGateway(t, rt, func(k string) string { return env[k] })
}

// benchGateway is the gateway configured from getenv, its REST calls made
// through rt, its access log written as the binary writes it to a writer
// that keeps nothing.
func benchGateway(t testing.TB, rt http.RoundTripper, getenv func(string) string) http.Handler {
	t.Helper()
	return startGateway(t, setup{getenv: getenv, restRT: rt, logs: io.Discard}).GW
}

// benchRequest is one POST /graphql, ready to be replayed.
type benchRequest struct {
	body   []byte
	header http.Header
}

// apqRequest is query sent as an automatic persisted query: its hash,
// with the query text too when register.
func (f *benchFixture) apqRequest(query string, vars map[string]any, register bool) benchRequest {
	sum := sha256.Sum256([]byte(query))
	m := map[string]any{"variables": vars, "extensions": map[string]any{
		"persistedQuery": map[string]any{"version": 1, "sha256Hash": hex.EncodeToString(sum[:])}}}
	if register {
		m["query"] = query
	}
	body, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	br := f.request(query, vars)
	br.body = body
	return br
}

func (f *benchFixture) request(query string, vars map[string]any) benchRequest {
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		panic(err)
	}
	return benchRequest{body: body, header: http.Header{
		"Content-Type": {"application/json"},
		"X-Api-Key":    {f.biz.APIKey},
		"X-Api-Secret": {f.biz.APISecret},
	}}
}

// serve runs one request through h in memory. The request and recorder
// are the benchmark's own cost (a real server allocates its own per
// request too); they are counted in allocs/op.
func (br benchRequest) serve(h http.Handler) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/graphql", bytes.NewReader(br.body))
	req.Header = br.header
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func (br benchRequest) check(t testing.TB, h http.Handler) {
	t.Helper()
	rec := br.serve(h)
	if rec.Code != http.StatusOK || bytes.Contains(rec.Body.Bytes(), []byte(`"errors"`)) {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
}

func benchServe(b *testing.B, h http.Handler, br benchRequest) {
	br.check(b, h)
	b.ReportAllocs()
	for b.Loop() {
		br.serve(h)
	}
}

// BenchmarkStubTransport is the stub's own cost per REST call, to be
// subtracted from the figures below (one REST call per query in all of
// them but Checkout, which makes two).
func BenchmarkStubTransport(b *testing.B) {
	f := newBenchFixture(b)
	req, _ := http.NewRequest(http.MethodGet, "http://rest.invalid/api/v1/payments/"+f.paymentID, nil)
	b.ReportAllocs()
	for b.Loop() {
		resp, _ := f.stub.RoundTrip(req)
		_, _ = io.Copy(io.Discard, resp.Body)
	}
}

// BenchmarkSinglePayment: one payment by id, end to end through the HTTP
// handler; 1 REST call (stubbed). Issue 6: under 150 allocs/op.
func BenchmarkSinglePayment(b *testing.B) {
	f := newBenchFixture(b)
	benchServe(b, benchStubGateway(b, f.stub), f.request(benchSingleQuery, map[string]any{"id": f.paymentID}))
}

// BenchmarkList100: a 100-item list, 1 REST call (stubbed).
func BenchmarkList100(b *testing.B) {
	f := newBenchFixture(b)
	benchServe(b, benchStubGateway(b, f.stub), f.request(benchList100, nil))
}

// BenchmarkList100Masked is BenchmarkList100 read at the masked
// customer-data level (CUSTOMER_DATA_MAX=masked, as a masked token would
// be): the records are masked copies, each payment is marshalled by gqlgen
// rather than the fast path (its customer's masked paths are noted where
// gqlgen has them), and the answer carries extensions.customerData.
func BenchmarkList100Masked(b *testing.B) {
	f := newBenchFixture(b)
	getenv := func(k string) string {
		if k == "CUSTOMER_DATA_MAX" {
			return "masked"
		}
		return unlimitedDefaults(k)
	}
	gw := startGateway(b, setup{getenv: getenv, restRT: f.stub}).GW
	benchServe(b, gw, f.request(benchList100, nil))
}

// BenchmarkAliases20: 20 aliases of one payment, 1 REST call (stubbed).
// BenchmarkList50Addr is go run ./bench's list50addr in memory: one list
// call and 50 detail calls, joined in the payments resolver
// (graph/listjoin.go) through the REST client's bounded fan-out.
func BenchmarkList50Addr(b *testing.B) {
	f := newBenchFixture(b)
	benchServe(b, benchStubGateway(b, f.stub), f.request(benchList50Addr, nil))
}

// BenchmarkList50AddrParallel is BenchmarkList50Addr with 16 requests at
// once (on 2 CPUs): their 16 calls each outnumber the merchant's 64
// slots, so most calls wait for a slot, as in go run ./bench at c=16.
func BenchmarkList50AddrParallel(b *testing.B) {
	f := newBenchFixture(b)
	h := benchStubGateway(b, f.stub)
	br := f.request(benchList50Addr, nil)
	br.check(b, h)
	b.ReportAllocs()
	b.SetParallelism(max(1, 16/runtime.GOMAXPROCS(0)))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			br.serve(h)
		}
	})
}

func BenchmarkAliases20(b *testing.B) {
	f := newBenchFixture(b)
	benchServe(b, benchStubGateway(b, f.stub), f.request(benchAliasesQuery(20), map[string]any{"id": f.paymentID}))
}

// BenchmarkCheckoutWithPayment: a checkout session by reference and its
// payment with the address, 2 REST calls (stubbed).
func BenchmarkCheckoutWithPayment(b *testing.B) {
	f := newBenchFixture(b)
	benchServe(b, benchStubGateway(b, f.stub), f.request(benchCheckout, map[string]any{"id": f.sessionID}))
}

// BenchmarkSinglePaymentLoopback is BenchmarkSinglePayment through
// newGateway's own transport against the sandbox on loopback TCP (both in
// this process): the difference to BenchmarkSinglePayment is the HTTP
// client and the loopback, plus the sandbox's own work and allocations.
func BenchmarkSinglePaymentLoopback(b *testing.B) {
	f := newBenchFixture(b)
	gw := startGateway(b, setup{getenv: unlimitedDefaults, rest: f.sb}).GW
	br := f.request(benchSingleQuery, map[string]any{"id": f.paymentID})
	benchServe(b, gw, br)
	b.StopTimer()
	f.sb.ResetCalls()
}

// BenchmarkListWithAddresses20ms (issue 3): the sandbox adds 20 ms to
// every REST call; payments(first: 50) { nodes { customer { address } } }
// costs 1 list call and 50 detail calls, which the loaders run at once:
// about two round trips (40 ms + the gateway's time), never 51 (1 s).
// With the default REST_MAX_CONCURRENCY=16 the 50 details go in 4 waves.
//
//	go test -run '^$' -bench ListWithAddresses20ms -benchtime 20x .
func BenchmarkListWithAddresses20ms(b *testing.B) {
	const latency = 20 * time.Millisecond
	for _, conc := range []string{"16", "50"} {
		b.Run("REST_MAX_CONCURRENCY="+conc, func(b *testing.B) {
			g := startGateway(b, setup{env: unlimited(map[string]string{"REST_MAX_CONCURRENCY": conc})})
			g.Sandbox.SetLatency(latency)
			h := creds(g.Biz[0])
			const q = `{ payments(first: 50) { nodes { customer { address } } } }`
			g.Post(b, h, q, nil).WantNoErrors(b) // warm: connections, query cache
			g.Sandbox.ResetCalls()
			for b.Loop() {
				g.Post(b, h, q, nil).WantNoErrors(b)
			}
			b.StopTimer()
			b.ReportMetric(float64(g.Sandbox.CallCount(""))/float64(b.N), "REST-calls/op")
			b.ReportMetric(float64(b.Elapsed())/float64(b.N)/float64(latency), "round-trips/op")
		})
	}
}

// TestAllocationBudget keeps the hot paths within their allocation
// budgets (docs/perf-log/2026-11-benchmarks.md). Allocation counts are deterministic enough to
// test; times are not, and none is tested here. scripts/test.sh runs it
// without -race, which changes allocation counts.
func TestAllocationBudget(t *testing.T) {
	if testenv.RaceEnabled() {
		t.Skip("the race detector changes allocation counts")
	}
	f := newBenchFixture(t)
	h := benchStubGateway(t, f.stub)
	limited := benchRateLimitedGateway(t, f.stub)
	req, _ := http.NewRequest(http.MethodGet, "http://rest.invalid/api/v1/payments/"+f.paymentID, nil)
	stub := testing.AllocsPerRun(100, func() {
		resp, _ := f.stub.RoundTrip(req)
		_, _ = io.Copy(io.Discard, resp.Body)
	})
	for _, tc := range []struct {
		name     string
		req      benchRequest
		restCall float64
		budget   int
		h        http.Handler // nil: h, rate limits off
	}{
		{"single payment", f.request(benchSingleQuery, map[string]any{"id": f.paymentID}), 1, benchBudgetSinglePayment, nil},
		{"100-item list", f.request(benchList100, nil), 1, benchBudgetList100, nil},
		{"20 aliases", f.request(benchAliasesQuery(20), map[string]any{"id": f.paymentID}), 1, benchBudgetAliases20, nil},
		{"50-item list with addresses", f.request(benchList50Addr, nil), 51, benchBudgetList50Addr, nil},
		{"checkout session with payment", f.request(benchCheckout, map[string]any{"id": f.sessionID}), 2, benchBudgetCheckout, nil},
		{"single payment by APQ hash", f.apqRequest(benchSingleQuery, map[string]any{"id": f.paymentID}, false), 1, benchBudgetSinglePaymentAPQ, nil},
		{"single payment, rate limits on", f.request(benchSingleQuery, map[string]any{"id": f.paymentID}), 1, benchBudgetSinglePaymentRateLimited, limited},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := h
			if tc.h != nil {
				h = tc.h
			}
			// Registers the APQ query (the others ignore the member).
			f.apqRequest(benchSingleQuery, map[string]any{"id": f.paymentID}, true).check(t, h)
			tc.req.check(t, h)
			runs := 200
			if tc.budget > 5000 {
				runs = 20
			}
			total := testing.AllocsPerRun(runs, func() { tc.req.serve(h) })
			got := total - stub*tc.restCall
			limit := float64(tc.budget) * (1 + benchAllocHeadroom)
			t.Logf("%s: %.0f allocs/op (%.0f with the stub); budget %d, limit %.0f", tc.name, got, total, tc.budget, limit)
			if got > limit {
				t.Errorf("%s: %.0f allocs/op, over the budget of %d (+%.0f%%): profile it (docs/perf-log/2026-11-benchmarks.md) before raising the budget",
					tc.name, got, tc.budget, benchAllocHeadroom*100)
			}
		})
	}
}
