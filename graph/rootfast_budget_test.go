package graph

import "testing"

// TestRootFastPathChargesAsGqlgen: the root fast path charges the
// response budget what gqlgen's resolvers charge for the same query
// (the payment's cost plan, and each address as its resolver does).
func TestRootFastPathChargesAsGqlgen(t *testing.T) {
	for _, q := range []string{
		`{ payment(id: "pay_a") { id status amount { amount paisa currency } customer { name email address } createdAt } }`,
		`{ a: payment(id: "pay_a") { id customer { x: address address } } b: payment(id: "pay_b") { customer { address } amount { amount } } }`,
		`{ payment(id: "pay_c") { ...P } } fragment P on Payment { id customer { name city } }`,
	} {
		fast, answered := chargedBy(t, false, q)
		slow, _ := chargedBy(t, true, q)
		if !answered || fast != slow || fast == 0 {
			t.Errorf("%s: charged %d by the root fast path (answered %v), %d by gqlgen", q, fast, answered, slow)
		}
	}
}
