package graph

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/google/go-cmp/cmp"
	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
)

// selectionAt parses query against the schema and returns the selection
// set of the field at path (response names), e.g. "payments.nodes".
func selectionAt(t *testing.T, query, path string) ast.SelectionSet {
	t.Helper()
	doc, err := gqlparser.LoadQueryWithRules(NewExecutableSchema(Config{}).Schema(), query, nil)
	if err != nil {
		t.Fatalf("query %q: %v", query, err)
	}
	sel := doc.Operations[0].SelectionSet
	for _, name := range strings.Split(path, ".") {
		var next ast.SelectionSet
		for _, s := range sel {
			if f, ok := s.(*ast.Field); ok && f.Alias == name {
				next = f.SelectionSet
			}
		}
		if next == nil {
			t.Fatalf("no field %q in %q", name, query)
		}
		sel = next
	}
	return sel
}

func TestMayBlock(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, query, path string
		want              bool
	}{
		{"list items without the address", `{ payments { nodes { id amount { amount } customer { name email } } } }`, "payments.nodes", false},
		{"list items with the address", `{ payments { nodes { id customer { name address } } } }`, "payments.nodes", true},
		{"edges with the address", `{ payments { edges { cursor node { customer { address } } } } }`, "payments.edges", true},
		{"edges without it", `{ payments { edges { cursor node { id createdAt } } } }`, "payments.edges", false},
		{"address through a fragment", `{ payments { nodes { ...C } } } fragment C on Payment { customer { address } }`, "payments.nodes", true},
		{"address through an inline fragment", `{ nodes(ids: ["pay_1"]) { id ... on Payment { customer { address } } } }`, "nodes", true},
		{"nodes without a resolver field", `{ nodes(ids: ["pay_1"]) { id ... on PaymentLink { url } } }`, "nodes", false},
		{"typename only", `{ payments { nodes { __typename } } }`, "payments.nodes", false},
		{"session metadata", `{ checkoutSession(id: "r") { metadata { key value } } }`, "checkoutSession.metadata", false},
		{"a deferred fragment", `{ payments { nodes { ... @defer { id } } } }`, "payments.nodes", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := mayBlock(selectionAt(t, tc.query, tc.path), false); got != tc.want {
				t.Errorf("mayBlock = %v, want %v", got, tc.want)
			}
		})
	}
}

// goroutineID is the running goroutine's number, from its stack header.
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	id, _, _ := bytes.Cut(bytes.TrimPrefix(buf, []byte("goroutine ")), []byte(" "))
	return string(id)
}

func listContext() context.Context {
	// gqlgen's DefaultRecover prints the stack: a quiet one.
	recoverQuietly := func(_ context.Context, p any) error { return fmt.Errorf("internal system error: %v", p) }
	ctx := graphql.WithResponseContext(context.Background(), graphql.DefaultErrorPresenter, recoverQuietly)
	return graphql.WithFieldContext(ctx, &graphql.FieldContext{Object: "PaymentConnection", Field: graphql.CollectedField{Field: &ast.Field{Alias: "nodes"}}})
}

// listRun is what one marshalling of a list gave: the array's bytes, the
// errors (sorted by path: gqlgen's goroutines add them in any order) and
// what each element's marshal saw of its field context.
type listRun struct {
	JSON   string
	Errors []string
	Seen   []string // per element: its index, path, and whether its parent is the list's
}

func runList(t *testing.T, n int, panics map[int]bool,
	list func(ctx context.Context, marshal func(ctx context.Context, i int) graphql.Marshaler) graphql.Array,
) listRun {
	t.Helper()
	ctx := listContext()
	parent := graphql.GetFieldContext(ctx)
	seen := make([]string, n)
	ret := list(ctx, func(ctx context.Context, i int) graphql.Marshaler {
		fc := graphql.GetFieldContext(ctx)
		index := -1
		if fc.Index != nil {
			index = *fc.Index
		}
		seen[i] = fmt.Sprintf("index %d, path %s, parent is the list's: %v, object %q", index, fc.Path(), fc.Parent == parent, fc.Object)
		if panics[i] {
			panic(fmt.Sprintf("item %d", i))
		}
		return graphql.MarshalInt(i)
	})
	var out listRun
	var buf bytes.Buffer
	ret.MarshalGQL(&buf)
	out.JSON, out.Seen = buf.String(), seen
	for _, e := range graphql.GetErrors(ctx) {
		out.Errors = append(out.Errors, e.Path.String()+": "+e.Message)
	}
	slices.Sort(out.Errors)
	return out
}

// TestMarshalListInline is differential: for items that select no
// resolver field, marshalList gives what gqlgen's own
// graphql.MarshalSliceConcurrently gives (the same bytes, the same
// errors at the same paths for a panicking item, the same field contexts
// per item), but in order on the caller's goroutine. A gqlgen that
// changes its list semantics fails here (graph/gen's fence names this
// test among what to re-verify).
func TestMarshalListInline(t *testing.T) {
	t.Parallel()
	sel := selectionAt(t, `{ payments { nodes { id } } }`, "payments.nodes")
	for _, tc := range []struct {
		name   string
		n      int
		panics map[int]bool
	}{
		{"empty", 0, nil},
		{"one item", 1, nil},
		{"one item that panics", 1, map[int]bool{0: true}},
		{"three items, the middle one panics", 3, map[int]bool{1: true}},
		{"every item panics", 4, map[int]bool{0: true, 1: true, 2: true, 3: true}},
		{"many items", 40, map[int]bool{7: true, 39: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gqlgen := runList(t, tc.n, tc.panics, func(ctx context.Context, m func(context.Context, int) graphql.Marshaler) graphql.Array {
				return graphql.MarshalSliceConcurrently(ctx, tc.n, 0, false, m)
			})
			caller := goroutineID()
			var order []int
			ours := runList(t, tc.n, tc.panics, func(ctx context.Context, m func(context.Context, int) graphql.Marshaler) graphql.Array {
				return marshalList(ctx, sel, tc.n, 0, false, func(ctx context.Context, i int) graphql.Marshaler {
					if g := goroutineID(); g != caller {
						t.Errorf("item %d on goroutine %s, caller %s", i, g, caller)
					}
					order = append(order, i)
					return m(ctx, i)
				})
			})
			if diff := cmp.Diff(gqlgen, ours); diff != "" {
				t.Errorf("marshalList differs from graphql.MarshalSliceConcurrently (-gqlgen +ours):\n%s", diff)
			}
			if len(tc.panics) > 0 && len(ours.Errors) != len(tc.panics) {
				t.Errorf("errors %v for %d panics", ours.Errors, len(tc.panics))
			}
			for i, got := range order {
				if got != i {
					t.Fatalf("items marshalled in order %v", order)
				}
			}
		})
	}
}

// TestMarshalListConcurrent: items that select a resolver field
// (customer.address) are marshalled on goroutines of their own, so that
// item 0 can wait for item 1 to start (its loader batch would). In a
// synctest bubble: marshalled one after another, item 0's wait ends at
// once, on the bubble's clock, with the error.
func TestMarshalListConcurrent(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		started := make(chan struct{})
		ret := marshalList(listContext(), selectionAt(t, `{ payments { nodes { customer { address } } } }`, "payments.nodes"), 2, 0, false,
			func(ctx context.Context, i int) graphql.Marshaler {
				if i == 1 {
					close(started)
					return graphql.MarshalInt(i)
				}
				select {
				case <-started:
				case <-time.After(10 * time.Second):
					t.Error("item 0 waited for item 1, which never started: not concurrent")
				}
				return graphql.MarshalInt(i)
			})
		if len(ret) != 2 || ret[0] == graphql.Null || ret[1] == graphql.Null {
			t.Errorf("results %v", ret)
		}
	})
}
