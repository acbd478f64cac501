package graph

// The list join: when a payments page's items select customer.address,
// which a list item lacks, the payments resolver loads their details in
// one bounded fan-out (Loaders.JoinPayments) before the page is
// marshalled, so the address resolver does not wait and the page is
// marshalled on one goroutine (marshalList). An item whose detail fails,
// or that the caller may not read, is left to its address resolver, which
// answers the loaders' error without a second call. An address selected
// only inside @defer is not joined.

import (
	"context"
	"slices"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"paygraph/graph/customerdata"
	"paygraph/graph/loaders"
	"paygraph/graph/model"
	"paygraph/restclient"
)

// joinAddresses fills the customer addresses of edges' payments when the
// payments field's selection sel asks for them outside @defer.
func (r *Resolver) joinAddresses(ctx context.Context, sel ast.SelectionSet, edges []*model.PaymentEdge) {
	if len(edges) == 0 || len(sel) == 0 || customerdata.WithholdsAddress(customerDataOf(ctx)) || !graphql.HasOperationContext(ctx) {
		return
	}
	if !loaders.JoinsAddress(graphql.GetOperationContext(ctx), sel) || budgetFrom(ctx).Check() != nil {
		return // a spent budget: the address resolvers answer it
	}
	ids := make([]string, 0, len(edges))
	items := make([]*restclient.Payment, 0, len(edges))
	at := make([]int, 0, len(edges))
	for i, e := range edges {
		c := e.Node.Customer()
		if c.AddressOf == "" || r.allowPayment(ctx, c.AddressOf) != nil {
			continue
		}
		ids = append(ids, c.AddressOf)
		items = append(items, c.ListItem)
		at = append(at, i)
	}
	if len(ids) == 0 {
		return
	}
	for j, res := range loaders.For(ctx).JoinPayments(ctx, ids, items) {
		if res.Err != nil || res.Value == nil {
			continue // the resolver answers its error
		}
		c := edges[at[j]].Node.Customer()
		c.Address, c.AddressOf = res.Value.Customer.Address, ""
	}
}

// joinedList reports whether the list in ctx's field (a page's edges or
// nodes) holds only payments whose address the join filled and sel blocks
// on nothing else.
func joinedList(ctx context.Context, sel ast.SelectionSet) bool {
	fc := graphql.GetFieldContext(ctx)
	if fc == nil || mayBlock(sel, true) {
		return false
	}
	switch v := fc.Result.(type) {
	case []*model.PaymentEdge:
		return !slices.ContainsFunc(v, func(e *model.PaymentEdge) bool { return e == nil || !addressKnown(e.Node) })
	case []*model.Payment:
		return !slices.ContainsFunc(v, func(p *model.Payment) bool { return !addressKnown(p) })
	}
	return false
}

// addressKnown reports whether p's customer address needs no load.
func addressKnown(p *model.Payment) bool { return p != nil && p.Customer().AddressOf == "" }
