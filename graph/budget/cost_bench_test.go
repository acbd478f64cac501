package budget

import (
	"fmt"
	"testing"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"

	"paygraph/graph/model"
	"paygraph/graph/relay"
	"paygraph/restclient"
)

// What the response budget costs a 100-item list: one walk of the
// field's selection (BenchmarkPlanWalk) and the estimate of 100 edges
// (BenchmarkConnectionCost). Both allocate nothing.
//
//	go test -run '^$' -bench 'PlanWalk|ConnectionCost' -benchmem ./graph/budget

const benchListQuery = `{ payments(first: 100) { edges { cursor node { id status amount { amount paisa currency } transactionId paymentMethod
	customer { name email phone address city } createdAt updatedAt } } nodes { id } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }`

func benchListField(b *testing.B) (*ast.QueryDocument, *ast.Field) {
	doc, err := parser.ParseQuery(&ast.Source{Input: benchListQuery})
	if err != nil {
		b.Fatal(err)
	}
	return doc, doc.Operations[0].SelectionSet[0].(*ast.Field)
}

func BenchmarkPlanWalk(b *testing.B) {
	doc, f := benchListField(b)
	b.ReportAllocs()
	for b.Loop() {
		var plan, items Plan
		w := planWalker{doc: doc, items: &items}
		w.walk(&plan, slotNone, f.SelectionSet, "PaymentConnection")
	}
}

func BenchmarkConnectionCost(b *testing.B) {
	doc, f := benchListField(b)
	var plan, items Plan
	w := planWalker{doc: doc, items: &items}
	w.walk(&plan, slotNone, f.SelectionSet, "PaymentConnection")
	name, email, txn := "Rahim Uddin", "rahim@example.com", "TXN123456789"
	edges := make([]*model.PaymentEdge, 100)
	for i := range edges {
		p := &restclient.Payment{ID: fmt.Sprintf("pay_prod_%032x", i), Currency: "BDT", TransactionID: &txn,
			Customer: restclient.Customer{Name: &name, Email: &email}}
		edges[i] = &model.PaymentEdge{Node: model.NewPayment(p), After: relay.Position{RestCursor: "cGF5X3Byb2RfMTIz", Skip: i + 1}}
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = new(Budget).ChargeConnection(&plan, &items, edges)
	}
}
