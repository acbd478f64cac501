package graph

import (
	"context"
	"paygraph/graph/admission"
	"paygraph/graph/model"
	"sync"
)

// FindCheckoutSession resolves sessions by id or reference, each on its
// own goroutine (at most admission.MaxNodes), as the session loader batches them.
func (r *entityResolver) FindCheckoutSession(ctx context.Context, reps []*model.CheckoutSessionRepresentation) ([]*model.CheckoutSession, error) {
	return entities(ctx, len(reps), func(i int) func() (*model.CheckoutSession, error) {
		key := valueOr(reps[i].SessionID, "")
		if reps[i].MatchedKey == model.CheckoutSessionMatchedKeyReference {
			key = valueOr(reps[i].Reference, "")
		}
		var (
			s    *model.CheckoutSession
			err  error
			done sync.WaitGroup
		)
		done.Go(func() { s, err = r.checkoutSessionUncharged(ctx, key) })
		return func() (*model.CheckoutSession, error) {
			done.Wait()
			return s, err
		}
	})
}

func (r *entityResolver) FindPayment(ctx context.Context, reps []*model.PaymentRepresentation) ([]*model.Payment, error) {
	return entities(ctx, len(reps), func(i int) func() (*model.Payment, error) {
		return nodeEntity[*model.Payment](ctx, r.Resolver, "payment id", valueOr(reps[i].IDRef, ""), admission.PaymentIDPrefix)
	})
}

func (r *entityResolver) FindPaymentLink(ctx context.Context, reps []*model.PaymentLinkRepresentation) ([]*model.PaymentLink, error) {
	return entities(ctx, len(reps), func(i int) func() (*model.PaymentLink, error) {
		return nodeEntity[*model.PaymentLink](ctx, r.Resolver, "payment link id", valueOr(reps[i].ID, ""), admission.LinkIDPrefix)
	})
}

func (r *Resolver) Entity() EntityResolver { return &entityResolver{r} }

type entityResolver struct{ *Resolver }
