package graph

import (
	"context"
	"sync"

	"github.com/99designs/gqlgen/graphql"

	"paygraph/graph/errcode"
	"paygraph/graph/model"
	"paygraph/restclient"
)

// The subgraph mode's entity resolvers: one call per _entities field and
// entity type. Every reference is checked and its load started before any
// is awaited, a fan-out as nodes(ids:) makes, with payment(id:)'s checks.

func (r *Resolver) paymentEntities(ctx context.Context, reps []*model.PaymentRepresentation) ([]*model.Payment, error) {
	return entities(ctx, len(reps), func(i int) func() (*model.Payment, error) {
		return nodeEntity[*model.Payment](ctx, r, "payment id", keyOf(reps[i].IDRef), paymentIDPrefix)
	})
}

func (r *Resolver) paymentLinkEntities(ctx context.Context, reps []*model.PaymentLinkRepresentation) ([]*model.PaymentLink, error) {
	return entities(ctx, len(reps), func(i int) func() (*model.PaymentLink, error) {
		return nodeEntity[*model.PaymentLink](ctx, r, "payment link id", keyOf(reps[i].ID), linkIDPrefix)
	})
}

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

// sessionEntities resolves checkout sessions by id or by reference (the
// two keys): the session loader batches concurrent lookups, so each
// starts on its own goroutine (at most MaxNodes).
func (r *Resolver) sessionEntities(ctx context.Context, reps []*model.CheckoutSessionRepresentation) ([]*model.CheckoutSession, error) {
	return entities(ctx, len(reps), func(i int) func() (*model.CheckoutSession, error) {
		key := keyOf(reps[i].SessionID)
		if reps[i].MatchedKey == model.CheckoutSessionMatchedKeyReference {
			key = keyOf(reps[i].Reference)
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

func failed[T any](err error) func() (T, error) {
	return func() (T, error) { var zero T; return zero, err }
}

// entities starts n loads, then waits for each: a reference that fails
// is null with its error at its index (graphql.BatchErrorList); a caller
// the REST API refused fails the whole group with that one error.
func entities[T any](ctx context.Context, n int, start func(i int) func() (T, error)) ([]T, error) {
	if n > MaxNodes {
		return nil, errcode.Inputf("_entities takes at most %d representations of a type, got %d", MaxNodes, n)
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
			v, err = charged(ctx, v)
		}
		if err != nil {
			if errs == nil {
				errs = make(graphql.BatchErrorList, n)
			}
			errs[i] = err
			continue
		}
		out[i] = v
	}
	if errs != nil {
		return out, errs
	}
	return out, nil
}

// keyOf is a representation's key field ("" when absent: checkID
// refuses it).
func keyOf(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
