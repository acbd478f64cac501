package gateway_test

// Benchmarks of what a flood of invented credential pairs costs a replica
// per request (issue 22, item 1): nodes(ids: [100 ids]) refused before it
// runs (over the shared budget of unaccepted pairs), nodes admitted (its
// pair's first REST call answered 401: 100 UNAUTHENTICATED errors), and
// { __typename }, which makes no REST call; each with the anonymous
// budgets lifted, and { __typename } refused by them (issue 37).
// e2e's TestUnacceptedCredentials compares a merchant's p99 under the two
// floods; these give each kind's own CPU cost, the hold (REFUSAL_DELAY_MAX)
// left out (0 here: the held answer is a parked goroutine and a timer).
//
//	go test -run '^$' -bench 'FreshPair' -benchmem ./gateway/

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// refusingREST answers every call 401, as the REST API does an invented pair.
type refusingREST struct{}

func (refusingREST) RoundTrip(r *http.Request) (*http.Response, error) {
	body := `{"error":"Invalid API credentials"}`
	return &http.Response{StatusCode: http.StatusUnauthorized, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: r, ProtoMajor: 1, ProtoMinor: 1}, nil
}

// benchFreshPairs serves query with a fresh pair each request, against a
// REST API that answers every call 401; env overrides the defaults. The
// last answer must contain want.
func benchFreshPairs(b *testing.B, query string, env map[string]string, want string) {
	gw := startGateway(b, setup{getenv: func(k string) string {
		if k == "REFUSAL_DELAY_MAX" {
			return "0s"
		}
		return env[k]
	}, restRT: refusingREST{}, logs: io.Discard}).GW
	f := &benchFixture{}
	br := f.request(query, nil)
	b.ReportAllocs()
	i := 0
	var last string
	for b.Loop() {
		i++
		h := br.header.Clone()
		h.Set("X-Api-Key", fmt.Sprintf("ak_test_flood%08d", i))
		h.Set("X-Api-Secret", fmt.Sprintf("sk_test_flood%08d", i))
		last = benchRequest{body: br.body, header: h}.serve(gw).Body.String()
	}
	if !strings.Contains(last, want) {
		b.Fatalf("the last answer has no %s: %.300s", want, last)
	}
	b.ReportMetric(float64(len(last)), "answer-bytes")
}

// BenchmarkFreshPairNodesRefused: nodes(ids: [100 ids]) with a fresh
// invented pair each request, refused before it runs.
func BenchmarkFreshPairNodesRefused(b *testing.B) {
	benchFreshPairs(b, nodes100(), noAnonymousBudget, `"code":"RATE_LIMITED"`)
}

// BenchmarkFreshPairNodesAdmitted: the same, each request admitted (the
// budgets of unaccepted pairs lifted), as the few of a flood that the
// budgets admit are: its pair's first REST call is answered 401, and the
// other 99 ids make none but answer an UNAUTHENTICATED error each.
func BenchmarkFreshPairNodesAdmitted(b *testing.B) {
	benchFreshPairs(b, nodes100(), admitAll, `"code":"UNAUTHENTICATED"`)
}

// BenchmarkFreshPairPaymentAdmitted: { payment(id) } admitted, its one
// call answered 401.
func BenchmarkFreshPairPaymentAdmitted(b *testing.B) {
	benchFreshPairs(b, `{ payment(id: "pay_x") { id } }`, admitAll, `"code":"UNAUTHENTICATED"`)
}

// admitAll lifts the budgets of unaccepted pairs, and the anonymous ones
// (noAnonymousBudget).
var admitAll = map[string]string{"REST_UNACCEPTED_CALLS_PER_SECOND": "1000000", "Config.RESTUnaccepted.PerAddressPerSecond": "1000000",
	"RATE_LIMIT_ANONYMOUS_PER_SECOND": "0", "RATE_LIMIT_ANONYMOUS_PER_ADDRESS_PER_SECOND": "0"}

// noAnonymousBudget lifts the anonymous budgets, which every request of a
// pair not yet accepted draws on first (BenchmarkFreshPairAnonymousRefused
// measures their refusal): the benchmarks then measure what lies behind.
var noAnonymousBudget = map[string]string{"RATE_LIMIT_ANONYMOUS_PER_SECOND": "0", "RATE_LIMIT_ANONYMOUS_PER_ADDRESS_PER_SECOND": "0"}

// nodes100 is nodes(ids: [100 ids]).
func nodes100() string {
	ids := make([]string, 100)
	for i := range ids {
		ids[i] = strconv.Quote(fmt.Sprintf("pay_prod_%032x", i))
	}
	return `{ nodes(ids: [` + strings.Join(ids, ",") + `]) { id } }`
}

// BenchmarkFreshPairTypename: { __typename } with a fresh pair each
// request, which makes no REST call, the anonymous budgets lifted.
func BenchmarkFreshPairTypename(b *testing.B) {
	benchFreshPairs(b, `{ __typename }`, noAnonymousBudget, `"__typename":"Query"`)
}

// BenchmarkFreshPairAnonymousRefused: { __typename } with a fresh pair
// each request at the defaults: past the anonymous budgets' bursts each
// is refused there, its body unread, as a flood of invented pairs is.
func BenchmarkFreshPairAnonymousRefused(b *testing.B) {
	benchFreshPairs(b, `{ __typename }`, nil, `"code":"RATE_LIMITED"`)
}
