package observe

import (
	"context"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// TestGraphQLMetricsCountDeferStreamOnce: the later results of a @defer
// stream (one operation context, several responses) are one request, with
// the outcome of its first payload.
func TestGraphQLMetricsCountDeferStreamOnce(t *testing.T) {
	t.Parallel()
	m := NewMetrics(wired(nil))
	ext := m.GraphQLExtension().(graphql.ResponseInterceptor)
	yes, no := true, false
	served, stats := WithRequestStats(context.Background())
	stats.AddRESTSuccess() // (a name joins the labels once the REST API served it)
	ctx := graphql.WithOperationContext(served,
		&graphql.OperationContext{Operation: &ast.OperationDefinition{Name: "Deferred", Operation: ast.Query}})
	for _, resp := range []*graphql.Response{
		{Data: []byte(`{"payments":{}}`), HasNext: &yes},
		{Data: []byte(`{"address":null}`), Path: ast.Path{ast.PathName("payments")}, HasNext: &yes,
			Errors: gqlerror.List{{Message: "x", Extensions: map[string]any{"code": "NOT_FOUND"}}}},
		{Data: []byte(`{"address":"a"}`), Path: ast.Path{ast.PathName("payments")}, HasNext: &no},
	} {
		ext.InterceptResponse(ctx, func(context.Context) *graphql.Response { return resp })
	}
	out := scrape(t, m)
	assertSeries(t, out,
		`paygraph_graphql_requests_total{operation="Deferred",outcome="ok"} 1`,
		`paygraph_graphql_request_duration_seconds_count{operation="Deferred"} 1`,
	)
	assertAbsent(t, "metrics", out, `operation="Deferred",outcome="NOT_FOUND"`)
}
