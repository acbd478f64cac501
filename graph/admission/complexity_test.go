package admission

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"

	"paygraph/sessiontoken"

	"paygraph/internal/gqltest"
)

// TestRESTCalls: the complexity of an operation is the number of REST
// calls it can make (restCalls documents the formula).
func TestRESTCalls(t *testing.T) {
	t.Parallel()
	hundredIDs := make([]any, 100)
	for i := range hundredIDs {
		hundredIDs[i] = fmt.Sprintf("pay_%d", i)
	}
	for _, tc := range []struct {
		name, query string
		vars        map[string]any
		want        int
	}{
		{"100-item list with every join", `{ payments(first: 100) { edges { cursor node { ` + gqltest.EveryPaymentField + ` } }
			nodes { ` + gqltest.EveryPaymentField + ` } pageInfo { hasNextPage endCursor } } }`, nil, 1 + 100},
		{"two full lists without address", `{ a: payments(first: 100) { nodes { id status amount { amount } customer { name email } } }
			b: payments(first: 100, status: FAILED) { edges { cursor node { id } } } }`, nil, 2},
		{"list continued after a cursor", `{ payments(first: 10, after: "c") { nodes { id } } }`, nil, 2},
		{"list with the default first and address", `{ payments { nodes { customer { address } } } }`, nil, 1 + DefaultFirst},
		{"first from a variable", `query($n: Int) { payments(first: $n) { nodes { customer { address } } } }`, map[string]any{"n": json.Number("50")}, 1 + 50},
		{"first out of range is clamped", `{ payments(first: 1000) { nodes { customer { address } } } }`, nil, 1 + MaxFirst},
		{"address through fragments on the list", `{ payments(first: 10) { ...Conn } }
			fragment Conn on PaymentConnection { edges { node { ...P } } }
			fragment P on Payment { customer { address } }`, nil, 1 + 10},
		{"one payment with its address", `{ payment(id: "pay_1") { ` + gqltest.EveryPaymentField + ` } }`, nil, 1},
		{"payment link", `{ paymentLink(id: "pl_1") { url } }`, nil, 1},
		{"checkout session", `{ checkoutSession(id: "ref") { sessionId customer { address } } }`, nil, 1},
		{"checkout session with its payment", `{ checkoutSession(id: "ref") { sessionId payment { ` + gqltest.EveryPaymentField + ` } again: payment { id } } }`, nil, 2},
		{"node with an inline fragment", `{ node(id: "pay_1") { id ... on Payment { customer { address } } } }`, nil, 1},
		{"100 nodes", `{ nodes(ids: [` + strings.Repeat(`"pay_1" `, 100) + `]) { id ... on Payment { customer { address } } } }`, nil, 100},
		{"nodes ids from a variable", `query($ids: [ID!]!) { nodes(ids: $ids) { id } }`, map[string]any{"ids": hundredIDs[:30]}, 30},
		{"one id coerced into the list", `query($ids: [ID!]!) { nodes(ids: $ids) { id } }`, map[string]any{"ids": []string{"pay_1"}}, 1},
		{"more ids than nodes takes", `query($ids: [ID!]!) { nodes(ids: $ids) { id } }`, map[string]any{"ids": append(hundredIDs, hundredIDs...)}, MaxNodes},
		{"49 aliases of nodes(100 ids)", gqltest.NodesQuery(49), map[string]any{"ids": hundredIDs}, 4900},
		{"aliases and fragments spread twice", `{ a: payment(id: "pay_1") { id } ...F ...F }
			fragment F on Query { b: paymentLink(id: "pl_1") { id } c: nodes(ids: ["pay_1", "pl_2"]) { id } }`, nil, 1 + 2*(1+2)},
		{"inline fragment on Query", `{ ... on Query { payment(id: "pay_1") { id } } }`, nil, 1},
		{"introspection", introspectionQuery, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := validated(t, tc.query)
			got := restCallsAt(doc, doc.Operations[0], tc.vars, false)
			if got != tc.want {
				t.Errorf("%d REST calls, want %d", got, tc.want)
			}
			// The check before validation is a lower bound: it never
			// refuses what the full estimate serves.
			if early := rootRESTCalls(doc, "", tc.vars); early > got {
				t.Errorf("the early estimate %d is over the full one %d", early, got)
			}
		})
	}
}

// TestEarlyComplexity: the root fields' REST calls are counted from the
// raw document and JSON variables, before validation, so that item 3's
// attack is refused before gqlgen coerces its 4,900 ids.
func TestEarlyComplexity(t *testing.T) {
	t.Parallel()
	hundredIDs := make([]any, 100)
	for i := range hundredIDs {
		hundredIDs[i] = fmt.Sprintf("pay_%d", i)
	}
	for _, tc := range []struct {
		name, query, op string
		vars            map[string]any
		want            int
	}{
		{"49 aliases of nodes from a variable", gqltest.NodesQuery(49), "", map[string]any{"ids": hundredIDs}, 4900},
		{"literal ids", `{ nodes(ids: ["pay_1", "pay_2"]) { id } a: payment(id: "pay_1") { id } }`, "", nil, 3},
		{"a variable that is not a list", `query($ids: [ID!]!) { nodes(ids: $ids) { id } }`, "", map[string]any{"ids": "pay_1"}, 0},
		{"the named operation only", `query A { payment(id: "pay_1") { id } } query B { nodes(ids: ["x", "y"]) { id } }`, "B", nil, 2},
		{"several operations, none named", `query A { payment(id: "pay_1") { id } } query B { payment(id: "pay_2") { id } }`, "", nil, 0},
		{"fragments at the root are not followed", `{ ...F } fragment F on Query { payment(id: "pay_1") { id } }`, "", nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := parser.ParseQuery(&ast.Source{Input: tc.query})
			if err != nil {
				t.Fatal(err)
			}
			if got := rootRESTCalls(doc, tc.op, tc.vars); got != tc.want {
				t.Errorf("%d REST calls, want %d", got, tc.want)
			}
		})
	}
}

// A withheld address costs no REST call in the estimate.
func TestRESTCallsWithheldAddress(t *testing.T) {
	t.Parallel()
	doc := validated(t, `{ payments(first: 50) { nodes { id customer { address } } } }`)
	for level, want := range map[sessiontoken.CustomerData]int{
		sessiontoken.CustomerDataFull: 51, sessiontoken.CustomerDataMasked: 1, sessiontoken.CustomerDataNone: 1,
	} {
		if got := restCallsAt(doc, doc.Operations[0], nil, level < sessiontoken.CustomerDataFull); got != want {
			t.Errorf("%v: %d REST calls, want %d", level, got, want)
		}
	}
}
