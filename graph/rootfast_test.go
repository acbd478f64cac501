package graph

import "testing"

// TestRootFastPath: queries of payment(id:) root fields that the root
// fast path answers, and ones it leaves to gqlgen (which then runs as
// before), answer the same bytes as gqlgen's executor alone.
func TestRootFastPath(t *testing.T) {
	p := newFastPair(t, newFastREST("N\"a\\m\u2028e", "weird status"))
	const sel = `{ id status amount { amount paisa currency } transactionId paymentMethod customer { name email phone city } createdAt updatedAt }`
	for _, tc := range []struct {
		name, query string
		vars        map[string]any
		wantRoot    bool
	}{
		{"one payment, a literal id", `{ payment(id: "pay_a") ` + sel + ` }`, nil, true},
		{"one payment, a variable id", `query P($id: ID!) { payment(id: $id) ` + sel + ` }`, map[string]any{"id": "pay_b"}, true},
		{"aliases of three payments", `{ a: payment(id: "pay_a") { id } b: payment(id: "pay_b") ` + sel + ` c: payment(id: "pay_c") { amount { paisa } __typename } }`, nil, true},
		{"aliases of one payment", `query A($id: ID!) { a: payment(id: $id) { id } b: payment(id: $id) { status } c: payment(id: "pay_a") { id } }`, map[string]any{"id": "pay_a"}, true},
		{"fragments inside", `{ payment(id: "pay_a") { ...P } } fragment P on Payment { id customer { name } }`, nil, true},
		{"not found", `{ a: payment(id: "pay_a") { id } b: payment(id: "pay_zz") { id } }`, nil, false},
		{"an invalid id", `{ a: payment(id: "pay_a") { id } b: payment(id: "nope") { id } }`, nil, false},
		{"a numeric variable", `query P($id: ID!) { payment(id: $id) { id } }`, map[string]any{"id": 12}, false},
		{"the address", `{ payment(id: "pay_a") { id customer { address } } }`, nil, true},
		{"addresses, aliased, null and not", `{ a: payment(id: "pay_a") { customer { address x: address name } } b: payment(id: "pay_b") { customer { address } } c: payment(id: "pay_a") { customer { ... on Customer { address } } } }`, nil, true},
		{"the address in a fragment", `{ payment(id: "pay_a") { ...P } } fragment P on Payment { customer { ...C } } fragment C on Customer { address city }`, nil, true},
		{"a directive on a root field", `{ payment(id: "pay_a") @include(if: true) { id } }`, nil, false},
		{"a duplicate alias", `{ a: payment(id: "pay_a") { id } a: payment(id: "pay_a") { status } }`, nil, false},
		{"another root field", `{ payment(id: "pay_a") { id } payments { nodes { id } } }`, nil, false},
		{"root typename", `{ __typename payment(id: "pay_a") { id } }`, nil, false},
		{"a root fragment", `{ ...Q } fragment Q on Query { payment(id: "pay_a") { id } }`, nil, false},
		{"deferred", `{ payment(id: "pay_a") { id ... @defer { status } } }`, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := rootAnswered.Load()
			p.compare(t, tc.query, tc.vars)
			if got := rootAnswered.Load() > before; got != tc.wantRoot {
				t.Errorf("the root fast path answered: %v, want %v", got, tc.wantRoot)
			}
		})
	}
}
