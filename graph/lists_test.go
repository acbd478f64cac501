package graph

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql"
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
			if got := mayBlock(selectionAt(t, tc.query, tc.path)); got != tc.want {
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
	ctx := graphql.WithResponseContext(context.Background(), graphql.DefaultErrorPresenter, graphql.DefaultRecover)
	return graphql.WithFieldContext(ctx, &graphql.FieldContext{Object: "PaymentConnection", Field: graphql.CollectedField{Field: &ast.Field{Alias: "nodes"}}})
}

// TestMarshalListInline: items that select no resolver field are
// marshalled in order on the caller's goroutine, each with its own index
// under the list's field context, and a panic in one becomes that item's
// null and an error at its path, as in gqlgen's own marshalling.
func TestMarshalListInline(t *testing.T) {
	ctx := listContext()
	parent := graphql.GetFieldContext(ctx)
	caller := goroutineID()
	var order []int
	ret := marshalList(ctx, selectionAt(t, `{ payments { nodes { id } } }`, "payments.nodes"), 3, 0, false,
		func(ctx context.Context, i int) graphql.Marshaler {
			fc := graphql.GetFieldContext(ctx)
			if g := goroutineID(); g != caller {
				t.Errorf("item %d on goroutine %s, caller %s", i, g, caller)
			}
			if fc.Index == nil || *fc.Index != i || fc.Parent != parent {
				t.Errorf("item %d: field context %+v", i, fc)
			}
			order = append(order, i)
			if i == 1 {
				panic("item 1")
			}
			return graphql.MarshalInt(i)
		})
	if len(order) != 3 || order[0] != 0 || order[1] != 1 || order[2] != 2 {
		t.Errorf("items marshalled in order %v", order)
	}
	if ret[1] != graphql.Null || ret[0] == graphql.Null || ret[2] == graphql.Null {
		t.Errorf("results %v: want item 1 null", ret)
	}
	errs := graphql.GetErrors(ctx)
	if len(errs) != 1 || errs[0].Path.String() != "nodes[1]" {
		t.Errorf("errors %v, want one at nodes[1]", errs)
	}
}

// TestMarshalListConcurrent: items that select a resolver field
// (customer.address) are marshalled on goroutines of their own, so that
// item 0 can wait for item 1 to start (its loader batch would).
func TestMarshalListConcurrent(t *testing.T) {
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
}
