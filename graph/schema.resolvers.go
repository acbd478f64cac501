package graph

import (
	"context"
	"paygraph/graph/admission"
	"paygraph/graph/customerdata"
	"paygraph/graph/errcode"
	"paygraph/graph/live"
	"paygraph/graph/loaders"
	"paygraph/graph/model"
	"paygraph/graph/receipt"
	"paygraph/restclient"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

func (r *checkoutSessionResolver) Payment(ctx context.Context, obj *model.CheckoutSession) (*model.Payment, error) {
	if obj.PaymentID == "" {
		return nil, nil
	}
	if err := r.allowPayment(ctx, obj.PaymentID); err != nil {
		return nil, err
	}
	if obj.LivePayment != nil { // a subscription's event (package live)
		return model.NewPayment(obj.LivePayment), nil
	}
	if err := budgetFrom(ctx).Check(); err != nil {
		return nil, err
	}
	p, err := loaders.For(ctx).PaymentThunkFor(ctx, obj.PaymentID, receipt.Origin{Line: "session " + obj.AskedAs})()
	if err != nil {
		return nil, err
	}
	return charged(ctx, model.NewPayment(p))
}

func (r *customerResolver) Address(ctx context.Context, obj *model.Customer) (*string, error) {
	if customerdata.WithholdsAddress(customerDataOf(ctx)) {
		// Withheld: not fetched (the records' own are masked already).
		return nil, nil
	}
	addr := obj.Address
	if obj.AddressOf != "" { // a list item's: its detail holds it
		if err := r.allowPayment(ctx, obj.AddressOf); err != nil {
			return nil, err
		}
		if err := budgetFrom(ctx).Check(); err != nil {
			return nil, err
		}
		p, err := loaders.For(ctx).PaymentThunkFor(ctx, obj.AddressOf, receipt.Origin{Item: obj.ListItem})()
		if err != nil {
			return nil, err
		}
		addr = p.Customer.Address
	}
	if err := budgetFrom(ctx).ChargeString(ctx, addr); err != nil {
		return nil, err
	}
	return addr, nil
}

func (r *queryResolver) Payments(ctx context.Context, first *int, after *string, status *model.PaymentStatus) (*model.PaymentConnection, error) {
	fc := graphql.GetFieldContext(ctx)
	var field graphql.CollectedField
	if fc != nil {
		field = fc.Field
		// The root fast path ran this field already and left its result to
		// gqlgen's executor to write: no second REST call or charge.
		if st := rootStateFrom(ctx); st != nil && st.listRan && st.plan != nil && st.plan.list != nil && st.plan.list.field.Field == field.Field {
			return st.listConn, st.listErr
		}
	}
	conn, err := r.paymentsOf(ctx, field, first, after, status)
	if conn != nil {
		conn.SetCursors()
	}
	return conn, err
}

func (r *queryResolver) Payment(ctx context.Context, id string) (*model.Payment, error) {
	return fetchByID(ctx, r.Resolver, "payment id", id, admission.PaymentIDPrefix, (*Resolver).allowPayment, (*loaders.Loaders).PaymentThunk, model.NewPayment)
}

func (r *queryResolver) PaymentLink(ctx context.Context, id string) (*model.PaymentLink, error) {
	return fetchByID(ctx, r.Resolver, "payment link id", id, admission.LinkIDPrefix, (*Resolver).allowLink, (*loaders.Loaders).PaymentLinkThunk, model.NewPaymentLink)
}

func (r *queryResolver) CheckoutSession(ctx context.Context, id string) (*model.CheckoutSession, error) {
	if err := budgetFrom(ctx).Check(); err != nil {
		return nil, err
	}
	m, err := r.checkoutSessionUncharged(ctx, id)
	if err != nil {
		return nil, err
	}
	return charged(ctx, m)
}

func (r *queryResolver) Node(ctx context.Context, id string) (model.Node, error) {
	if err := budgetFrom(ctx).Check(); err != nil {
		return nil, err
	}
	n, err := r.nodeThunk(ctx, id)()
	if err != nil {
		return nil, err
	}
	return charged(ctx, n)
}

// Nodes answers in the order of ids; a missing or invalid one is null with
// its own error at its own index.
func (r *queryResolver) Nodes(ctx context.Context, ids []string) ([]model.Node, error) {
	if len(ids) > admission.MaxNodes {
		return nil, errcode.Inputf("nodes takes at most %d ids, got %d", admission.MaxNodes, len(ids))
	}
	budget := budgetFrom(ctx)
	if err := budget.Check(); err != nil {
		return nil, err
	}
	thunks := make([]func() (model.Node, error), len(ids))
	for i, id := range ids {
		thunks[i] = r.nodeThunk(ctx, id)
	}
	out := make([]model.Node, len(ids))
	path := graphql.GetPath(ctx)
	// Each error points at the nodes field, as gqlgen's field errors do.
	var locations []gqlerror.Location
	if fc := graphql.GetFieldContext(ctx); fc != nil && fc.Field.Field != nil && fc.Field.Position != nil {
		locations = []gqlerror.Location{{Line: fc.Field.Position.Line, Column: fc.Field.Position.Column}}
	}
	for i, t := range thunks {
		n, err := t()
		switch {
		case err == nil:
			out[i] = n
		case restclient.Refused(ctx):
			// The REST API refused the operation's credentials: every id
			// fails alike, so the field fails with that one error.
			return nil, err
		default:
			graphql.AddError(ctx, &gqlerror.Error{
				Err:       err,
				Message:   err.Error(),
				Path:      append(path[:len(path):len(path)], ast.PathIndex(i)),
				Locations: locations,
			})
		}
	}
	// The whole field fails: one error, not one per id.
	if err := budget.ChargeNodes(ctx, out); err != nil {
		return nil, err
	}
	return out, nil
}

func (r *subscriptionResolver) PaymentUpdated(ctx context.Context, id string, lastEventID *string) (<-chan *model.Payment, error) {
	if err := checkID("payment id", id, admission.PaymentIDPrefix); err != nil {
		return nil, err
	}
	after, err := live.ResumeAfter(ctx, lastEventID)
	if err != nil {
		return nil, err
	}
	if err := r.allowPayment(ctx, id); err != nil {
		return nil, err
	}
	return r.Live.Payment(ctx, subscriber(ctx), id, after)
}

func (r *subscriptionResolver) CheckoutSessionUpdated(ctx context.Context, id string, lastEventID *string) (<-chan *model.CheckoutSession, error) {
	if err := checkID("checkout session id or reference", id, ""); err != nil {
		return nil, err
	}
	after, err := live.ResumeAfter(ctx, lastEventID)
	if err != nil {
		return nil, err
	}
	if err := r.allow(ctx, true, func(s Scope) bool { return s.AllowsCheckoutSession(id) }, "checkout session ", id); err != nil {
		return nil, err
	}
	return r.Live.CheckoutSession(ctx, subscriber(ctx), id, after)
}

func (r *Resolver) CheckoutSession() CheckoutSessionResolver { return &checkoutSessionResolver{r} }

func (r *Resolver) Customer() CustomerResolver { return &customerResolver{r} }

func (r *Resolver) Query() QueryResolver { return &queryResolver{r} }

func (r *Resolver) Subscription() SubscriptionResolver { return &subscriptionResolver{r} }

type (
	checkoutSessionResolver struct{ *Resolver }
	customerResolver        struct{ *Resolver }
	queryResolver           struct{ *Resolver }
	subscriptionResolver    struct{ *Resolver }
)
