package graph

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/graph-gophers/dataloader/v7"

	"paygraph/graph/admission"
	"paygraph/graph/budget"
	"paygraph/graph/errcode"
	"paygraph/graph/loaders"
	"paygraph/graph/model"
	"paygraph/graph/relay"
	"paygraph/restclient"
)

// paymentsOf is the payments resolver for field, without a field context
// (for the root fast path). It leaves the cursors (an HMAC each) to
// SetCursors, so the root fast path makes only those it writes.
func (r *Resolver) paymentsOf(ctx context.Context, field graphql.CollectedField, first *int, after *string, status *model.PaymentStatus) (*model.PaymentConnection, error) {
	if err := r.allow(ctx, false, Scope.AllowsList, "the payments list", ""); err != nil {
		return nil, err
	}
	n := valueOr(first, admission.DefaultFirst)
	if n < 0 || n > admission.MaxFirst {
		return nil, errcode.Inputf("first must be between 0 and %d, got %d", admission.MaxFirst, n)
	}
	filter := restclient.PaymentStatus(valueOr(status, ""))
	var items budget.Plan
	budget, plan := budgetFrom(ctx).FieldPlan(ctx, field, "PaymentConnection", &items)
	if err := budget.Check(); err != nil {
		return nil, err
	}
	cursors, err := r.cursorSigner(ctx)
	if err != nil {
		return nil, err
	}
	pos := relay.Position{Status: filter}
	if after != nil {
		// A cursor not made for this merchant never reaches the REST API.
		p, err := cursors.Decode(*after)
		if err != nil {
			return nil, errcode.Inputf("after is not a cursor this API gave these credentials (pass an edge's cursor or pageInfo.endCursor unchanged, with the same credentials)")
		}
		if p.Status != filter {
			return nil, errcode.Inputf("after belongs to a list with another status filter (%s); pass the same status to continue it", describeFilter(p.Status))
		}
		pos = p
	}

	edges := make([]*model.PaymentEdge, 0, n)
	// The page's edges and payments in one allocation each (the walk makes
	// at most n; more would start new arrays, pointers staying valid).
	edgeStore := make([]model.PaymentEdge, 0, n)
	paymentStore := make([]model.Payment, 0, n)
	ld := loaders.For(ctx)
	// The pages admission's estimate counted, no more: short pages claiming
	// has_more give a shorter connection, which its endCursor continues.
	pages := 1
	if after != nil && pos.Skip+max(n, 1) > admission.RESTMaxLimit {
		pages = 2
	}
	walk := relay.NewWalk(pos, n, admission.RESTMaxLimit, pages)
	var listID string // the list's line in the plan (admission.ListID)
	if ld.Cost().Recording() {
		listID = admission.ListID(n, string(filter), valueOr(after, ""))
	}
	read := 0
	for cursor, limit, ok := walk.Next(); ok; cursor, limit, ok = walk.Next() {
		page, err := ld.ListPayments(ctx, restclient.ListParams{Limit: limit, Cursor: cursor, Status: filter}, listID)
		if err != nil {
			return nil, err
		}
		read++
		next := ""
		if page.HasMore && page.NextCursor != nil {
			next = *page.NextCursor
		}
		start, end := walk.Page(len(page.Data), next)
		for i := start; i < end; i++ {
			paymentStore = append(paymentStore, model.Payment{})
			node := &paymentStore[len(paymentStore)-1]
			node.Bind(&page.Data[i])
			edgeStore = append(edgeStore, model.PaymentEdge{Node: node, After: walk.After(i), Cursors: cursors})
			edges = append(edges, &edgeStore[len(edgeStore)-1])
		}
	}
	hasNext := walk.HasNext()
	if listID != "" {
		ld.Cost().ShortList(listID, pages, read, len(edges))
	}

	if err := budget.ChargeConnection(&plan, &items, edges); err != nil {
		return nil, err
	}
	r.joinAddresses(ctx, field.Selections, edges) // the items' addresses, one fan-out (listjoin.go)
	conn := &model.PaymentConnection{
		Edges:    edges,
		Nodes:    make([]*model.Payment, len(edges)),
		PageInfo: &model.PageInfo{HasNextPage: hasNext, HasPreviousPage: after != nil},
	}
	for i, e := range edges {
		conn.Nodes[i] = e.Node
	}
	return conn, nil
}

func describeFilter(s restclient.PaymentStatus) string {
	if s == "" {
		return "no status"
	}
	return "status " + string(s)
}

// fetchByID is a record's root field: the id, scope and budget checks,
// then the load and its charge.
func fetchByID[V, M any](ctx context.Context, r *Resolver, what, id, prefix string, allow func(*Resolver, context.Context, string) error,
	load func(*loaders.Loaders, context.Context, string) dataloader.Thunk[V], wrap func(V) M) (M, error) {
	var zero M
	if err := checkID(what, id, prefix); err != nil {
		return zero, err
	}
	if err := allow(r, ctx, id); err != nil {
		return zero, err
	}
	if err := budgetFrom(ctx).Check(); err != nil {
		return zero, err
	}
	v, err := load(loaders.For(ctx), ctx, id)()
	if err != nil {
		return zero, err
	}
	return charged(ctx, wrap(v))
}

// charged returns v once the response budget has room for its rendering.
func charged[T any](ctx context.Context, v T) (T, error) {
	if err := budgetFrom(ctx).ChargeObject(ctx, v); err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}

// checkoutSessionUncharged is checkoutSession without the budget's charge.
func (r *Resolver) checkoutSessionUncharged(ctx context.Context, id string) (*model.CheckoutSession, error) {
	if err := checkID("checkout session id or reference", id, ""); err != nil {
		return nil, err
	}
	if err := r.allow(ctx, true, func(s Scope) bool { return s.AllowsCheckoutSession(id) }, "checkout session ", id); err != nil {
		return nil, err
	}
	s, err := loaders.For(ctx).CheckoutSession(ctx, id)
	if err != nil {
		return nil, err
	}
	learn(ctx, s)
	m := model.NewCheckoutSession(s)
	m.AskedAs = id
	return m, nil
}

// nodeThunk starts loading the object behind a Relay id and returns a
// function that waits for it, so that nodes(ids:) fans out.
func (r *Resolver) nodeThunk(ctx context.Context, id string) func() (model.Node, error) {
	switch {
	case validID(id, admission.PaymentIDPrefix):
		return startNode(ctx, r, id, (*Resolver).allowPayment, (*loaders.Loaders).PaymentThunk, model.NewPayment)
	case validID(id, admission.LinkIDPrefix):
		return startNode(ctx, r, id, (*Resolver).allowLink, (*loaders.Loaders).PaymentLinkThunk, model.NewPaymentLink)
	default:
		return failed[model.Node](errcode.Inputf("id %q is not a Node id: expected a payment id (pay_...) or a payment link id (pl_...)", id))
	}
}

// startNode is nodeThunk once id's kind is known.
func startNode[V any, M model.Node](ctx context.Context, r *Resolver, id string, allow func(*Resolver, context.Context, string) error,
	load func(*loaders.Loaders, context.Context, string) dataloader.Thunk[V], node func(V) M,
) func() (model.Node, error) {
	if err := allow(r, ctx, id); err != nil {
		return failed[model.Node](err)
	}
	t := load(loaders.For(ctx), ctx, id)
	return func() (model.Node, error) {
		v, err := t()
		if err != nil {
			return nil, err
		}
		return node(v), nil
	}
}

// allowPayment and allowLink are the scope checks of a payment or link id.
func (r *Resolver) allowPayment(ctx context.Context, id string) error {
	return r.allow(ctx, true, func(s Scope) bool { return s.AllowsPayment(id) }, "payment ", id)
}

func (r *Resolver) allowLink(ctx context.Context, id string) error {
	return r.allow(ctx, false, func(s Scope) bool { return s.AllowsPaymentLink(id) }, "payment link ", id)
}

// The subgraph mode's entity resolvers (entity.resolvers.go), one call per
// _entities field and type, start every load before any is awaited.

// nodeEntity is nodeThunk for an entity id of the kind prefix names, once
// checkID accepted it.
func nodeEntity[T model.Node](ctx context.Context, r *Resolver, what, id, prefix string) func() (T, error) {
	if err := checkID(what, id, prefix); err != nil {
		return failed[T](err)
	}
	t := r.nodeThunk(ctx, id)
	return func() (T, error) {
		n, err := t()
		v, _ := n.(T)
		return v, err
	}
}

func failed[T any](err error) func() (T, error) {
	return func() (T, error) { var zero T; return zero, err }
}

// entities starts n loads, then waits for each: a reference that fails is
// null with its error at its index; a refused caller fails the group.
func entities[T any](ctx context.Context, n int, start func(i int) func() (T, error)) ([]T, error) {
	if n > admission.MaxNodes {
		return nil, errcode.Inputf("_entities takes at most %d representations of a type, got %d", admission.MaxNodes, n)
	}
	if err := budgetFrom(ctx).Check(); err != nil {
		return nil, err
	}
	thunks := make([]func() (T, error), n)
	for i := range thunks {
		thunks[i] = start(i)
	}
	out := make([]T, n)
	var errs graphql.BatchErrorList
	for i, t := range thunks {
		v, err := t()
		if err != nil && restclient.Refused(ctx) {
			return nil, err
		}
		if err == nil {
			if out[i], err = charged(ctx, v); err == nil {
				continue
			}
		}
		if errs == nil {
			errs = make(graphql.BatchErrorList, n)
		}
		errs[i] = err
	}
	if errs != nil {
		return out, errs
	}
	return out, nil
}

// valueOr is *p, or def when p is nil.
func valueOr[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}
