package observe

// BenchmarkMetricsPerRequest: what one payment's request costs the
// metrics: the in-flight gauge, the GraphQL extension's count and
// duration, one REST call's count and duration, one loader batch. Issue
// 25's figures: docs/perf-log/2026-11-issue-25.md.
//
//	go test -run '^$' -bench MetricsPerRequest -benchmem -count 5 ./observe

import (
	"context"
	"net/http"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
)

// okTransport answers every call 200 without a network.
type okTransport struct{ resp *http.Response }

func (t okTransport) RoundTrip(*http.Request) (*http.Response, error) { return t.resp, nil }

func BenchmarkMetricsPerRequest(b *testing.B) {
	m := NewMetrics(wired(nil))
	rt := m.RESTTransport(okTransport{&http.Response{StatusCode: http.StatusOK}})
	ext := m.GraphQLExtension().(graphql.ResponseInterceptor)
	ctx, stats := WithRequestStats(context.Background())
	stats.AddRESTSuccess()
	oc := &graphql.OperationContext{Operation: &ast.OperationDefinition{Name: "GetPayment", Operation: ast.Query}}
	ctx = graphql.WithOperationContext(ctx, oc)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://rest.invalid/api/v1/payments/pay_prod_abc", nil)
	resp := &graphql.Response{Data: []byte(`{}`)}
	next := func(context.Context) *graphql.Response { return resp }
	h := m.InFlight(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		_, _ = rt.RoundTrip(req)
		m.ObserveBatch("payment", 1)
		// A new operation each time, whose stats' map the graph layer
		// made already (its estimate), as in the gateway.
		oc.Stats.SetExtension(countedStat, nil)
		ext.InterceptResponse(ctx, next)
	}))
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(nil, req)
	}
}
