package observe

import (
	"context"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
)

// TestTracingPassesBoundFieldsThrough: the promise the executor's fast
// path relies on (graph.PassesBoundFieldsThrough): for a field bound to
// the record, the tracing interceptor calls next once with the context it
// got and returns what next returns; a resolver's field gets a context of
// its own (its span's).
func TestTracingPassesBoundFieldsThrough(t *testing.T) {
	t.Parallel()
	ext := TracingExtension(Options{})
	if _, ok := ext.(interface{ PassesBoundFieldsThrough() }); !ok {
		t.Fatal("the tracing extension does not promise to pass bound fields through")
	}
	root := &graphql.FieldContext{Object: "Query", Field: graphql.CollectedField{Field: &ast.Field{Name: "payments", Alias: "payments"}}, IsResolver: true}
	for _, tc := range []struct {
		name    string
		fc      *graphql.FieldContext
		sameCtx bool
	}{
		{"a bound field", &graphql.FieldContext{Parent: root, Object: "Payment", Field: graphql.CollectedField{Field: &ast.Field{Name: "id", Alias: "id"}}}, true},
		{"a method field", &graphql.FieldContext{Parent: root, Object: "Payment", Field: graphql.CollectedField{Field: &ast.Field{Name: "customer", Alias: "customer"}}, IsMethod: true}, true},
		{"a resolver", &graphql.FieldContext{Parent: root, Object: "Customer", Field: graphql.CollectedField{Field: &ast.Field{Name: "address", Alias: "address"}}, IsResolver: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// WithFieldContext sets the parent from the context.
			ctx := graphql.WithFieldContext(graphql.WithFieldContext(context.Background(), root), tc.fc)
			calls := 0
			res, err := ext.(graphql.FieldInterceptor).InterceptField(ctx, func(got context.Context) (any, error) {
				calls++
				if (got == ctx) != tc.sameCtx {
					t.Errorf("next got the interceptor's context: %v, want %v", got == ctx, tc.sameCtx)
				}
				return "v", nil
			})
			if calls != 1 || res != "v" || err != nil {
				t.Errorf("next called %d times, result %v, %v", calls, res, err)
			}
		})
	}
}
