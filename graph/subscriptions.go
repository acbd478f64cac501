package graph

// The Subscription resolvers: their checks (id, scope), then package
// live's subscription, with the operation's events and customer-data
// level.

import (
	"context"

	"paygraph/graph/live"
	"paygraph/graph/model"
)

func (r *Resolver) paymentUpdated(ctx context.Context, id string, lastEventID *string) (<-chan *model.Payment, error) {
	if err := checkID("payment id", id, paymentIDPrefix); err != nil {
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

func (r *Resolver) checkoutSessionUpdated(ctx context.Context, id string, lastEventID *string) (<-chan *model.CheckoutSession, error) {
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

func subscriber(ctx context.Context) live.Subscriber {
	return live.Subscriber{Events: liveEventsFrom(ctx), Level: customerDataOf(ctx)}
}

// liveEventsFrom is the operation's live.Events, nil but in a
// subscription.
func liveEventsFrom(ctx context.Context) *live.Events {
	if c := callerOf(ctx); c != nil {
		return c.live
	}
	return live.EventsIn(ctx)
}
