package graph

import (
	"context"

	"github.com/99designs/gqlgen/graphql"

	"paygraph/graph/admission"
	"paygraph/graph/errcode"
	"paygraph/graph/model"
	"paygraph/restclient"
)

// The subgraph mode's entity resolvers (entity.resolvers.go): one call per
// _entities field and type, every load started before any is awaited.

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

// valueOr is *p, or def when p is nil.
func valueOr[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}
