package graph

// The list join: a payments page whose items' selection asks for
// customer.address gets its items' detail records (which hold the address;
// a list item does not) from the payments resolver, in one bounded fan-out
// of the REST client (loaders.Loaders.JoinPayments), before the page is marshalled.
// The address resolver then only returns the address it was given, so the
// page is marshalled on one goroutine (marshalList) rather than with a
// goroutine per item, each waiting on a loader. An item whose detail fails
// (or that the caller may not read) keeps the resolver path: its address
// resolver answers the error (the failed load is known to the request's
// loaders, so no second call), null at its own path. A selection that
// reaches the address only inside a deferred fragment (@defer) is not
// joined: the deferred part resolves it later, as before.

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"paygraph/graph/customerdata"
	"paygraph/graph/loaders"
	"paygraph/graph/model"
	"paygraph/restclient"
)

// joinAddresses fills the customer addresses of edges' payments (list
// items) when the payments field's selection sel asks for them outside
// any deferred fragment.
func (r *Resolver) joinAddresses(ctx context.Context, sel ast.SelectionSet, edges []*model.PaymentEdge) {
	if len(edges) == 0 || len(sel) == 0 || customerdata.WithholdsAddress(customerDataOf(ctx)) || !graphql.HasOperationContext(ctx) {
		return
	}
	if !loaders.JoinsAddress(graphql.GetOperationContext(ctx), sel) {
		return
	}
	if budgetFrom(ctx).Check() != nil {
		return // the address resolvers answer it
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
	for j, res := range r.loaders(ctx).JoinPayments(ctx, ids, items) {
		if res.Err != nil || res.Value == nil {
			continue // the resolver answers its error
		}
		c := edges[at[j]].Node.Customer()
		c.Address, c.AddressOf = res.Value.Customer.Address, ""
	}
}

// joinedList reports whether the list in ctx's field (its Result: edges
// or nodes of a payments page) holds only payments whose address is
// known, the join's (joinAddresses), and sel blocks on nothing else:
// marshalList then needs no goroutine per item.
func joinedList(ctx context.Context, sel ast.SelectionSet) bool {
	fc := graphql.GetFieldContext(ctx)
	if fc == nil || mayBlockBut(sel, true) {
		return false
	}
	switch v := fc.Result.(type) {
	case []*model.PaymentEdge:
		for _, e := range v {
			if e == nil || e.Node == nil || e.Node.Customer().AddressOf != "" {
				return false
			}
		}
		return true
	case []*model.Payment:
		for _, p := range v {
			if p == nil || p.Customer().AddressOf != "" {
				return false
			}
		}
		return true
	}
	return false
}
