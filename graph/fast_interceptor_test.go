package graph

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/google/go-cmp/cmp"
)

// fieldRecorder is a field interceptor that records the path of every
// field it sees, or (resolversOnly) of root fields and resolvers' only,
// passing the others through as PassesBoundFieldsThrough promises.
type fieldRecorder struct {
	resolversOnly bool
	mu            *sync.Mutex
	seen          *[]string
}

func (fieldRecorder) ExtensionName() string                   { return "fieldRecorder" }
func (fieldRecorder) Validate(graphql.ExecutableSchema) error { return nil }

func (r fieldRecorder) InterceptField(ctx context.Context, next graphql.Resolver) (any, error) {
	fc := graphql.GetFieldContext(ctx)
	if r.resolversOnly && !fc.IsResolver && fc.Parent != nil {
		return next(ctx)
	}
	r.mu.Lock()
	*r.seen = append(*r.seen, fc.Object+"."+fc.Field.Name+" at "+fc.Path().String())
	r.mu.Unlock()
	return next(ctx)
}

// promisingRecorder makes fieldRecorder's promise.
type promisingRecorder struct{ fieldRecorder }

func (promisingRecorder) PassesBoundFieldsThrough() {}

// TestFieldInterceptorFastPath: a field interceptor sees the same fields
// with the fast path (fast.go) on and off. One that sees every field
// turns the fast path off (no plan is compiled); one that promises to
// pass bound fields through keeps it on (plans are compiled) and sees
// the same root fields and resolvers either way.
func TestFieldInterceptorFastPath(t *testing.T) {
	rest := newFastREST("Padma", "SUCCEEDED")
	queries := []string{
		`{ payments { nodes { id status amount { amount currency } customer { name email } } } }`,
		`{ payments { nodes { id customer { name address } } } }`,
		`{ payments(first: 2) { edges { cursor node { id amount { paisa } } } } }`,
		`{ a: payment(id: "pay_a") { id customer { address city } } b: payment(id: "pay_b") { amount { amount } } }`,
	}
	serve := func(t *testing.T, ext graphql.HandlerExtension, noFast bool, seen *[]string) ([]string, int64) {
		h := NewRig(t, RigConfig{REST: rest, NoFastPath: noFast,
			Server: ServerConfig{MaxResponseBytes: -1, Extensions: []graphql.HandlerExtension{ext}}}).Handler
		var answers []string
		before := fastCompiled.Load()
		for _, q := range queries {
			answers = append(answers, string(fastPair{}.post(h, q, nil)))
		}
		slices.Sort(*seen)
		return answers, fastCompiled.Load() - before
	}
	for _, tc := range []struct {
		name     string
		promise  bool
		wantFast bool
	}{
		{"an interceptor of every field", false, false},
		{"an interceptor that passes bound fields through", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var seenOn, seenOff []string
			ext := func(seen *[]string) graphql.HandlerExtension {
				r := fieldRecorder{resolversOnly: tc.promise, mu: &mu, seen: seen}
				if tc.promise {
					return promisingRecorder{r}
				}
				return r
			}
			on, compiled := serve(t, ext(&seenOn), false, &seenOn)
			off, _ := serve(t, ext(&seenOff), true, &seenOff)
			if diff := cmp.Diff(off, on); diff != "" {
				t.Errorf("answers differ (-fast path off +on):\n%s", diff)
			}
			if diff := cmp.Diff(seenOff, seenOn); diff != "" {
				t.Errorf("the interceptor saw other fields (-fast path off +on):\n%s", diff)
			}
			if len(seenOn) == 0 {
				t.Error("the interceptor saw no field")
			}
			if got := compiled > 0; got != tc.wantFast {
				t.Errorf("the fast path compiled plans: %v (%d), want %v", got, compiled, tc.wantFast)
			}
		})
	}
}
