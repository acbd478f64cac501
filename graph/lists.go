package graph

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
)

// marshalList marshals a list as gqlgen's graphql.MarshalSliceConcurrently
// does (same field contexts and panic recovery), but on the calling
// goroutine when no element can block: a goroutine per element pays only
// when elements wait on a loader behind a field gqlgen resolves
// concurrently (customer.address of list items not joined: joinedList).
// graph/gen points gqlgen's generated list marshallers here.
func marshalList(ctx context.Context, sel ast.SelectionSet, n int, workerLimit int64, omitPanicHandler bool,
	marshal func(ctx context.Context, i int) graphql.Marshaler,
) graphql.Array {
	if n < 2 || mayBlock(sel, false) && !joinedList(ctx, sel) {
		return graphql.MarshalSliceConcurrently(ctx, n, workerLimit, omitPanicHandler, marshal)
	}
	ret := make(graphql.Array, n)
	fcs := make([]graphql.FieldContext, n)
	index := make([]int, n)
	for i := range n {
		index[i] = i
		fcs[i].Index = &index[i]
		ret[i] = marshalElement(graphql.WithFieldContext(ctx, &fcs[i]), i, omitPanicHandler, marshal)
	}
	return ret
}

func marshalElement(ctx context.Context, i int, omitPanicHandler bool,
	marshal func(ctx context.Context, i int) graphql.Marshaler,
) (ret graphql.Marshaler) {
	if !omitPanicHandler {
		defer func() {
			if r := recover(); r != nil {
				graphql.AddError(ctx, graphql.Recover(ctx, r))
				ret = graphql.Null
			}
		}()
	}
	return marshal(ctx, i)
}

// mayBlock reports whether a selection reaches a field gqlgen resolves
// concurrently (concurrent_gen.go) or defers a fragment; it errs towards
// true. When joined, Customer.address does not count (a joined list's
// addresses are known).
func mayBlock(sel ast.SelectionSet, joined bool) bool {
	for _, s := range sel {
		switch s := s.(type) {
		case *ast.Field:
			if s.ObjectDefinition == nil || mayBlock(s.SelectionSet, joined) ||
				concurrentField(s.ObjectDefinition.Name, s.Name) && !(joined && s.ObjectDefinition.Name == "Customer" && s.Name == "address") {
				return true
			}
		case *ast.InlineFragment:
			if deferred(s.Directives) || mayBlock(s.SelectionSet, joined) {
				return true
			}
		case *ast.FragmentSpread:
			if s.Definition == nil || deferred(s.Directives) || mayBlock(s.Definition.SelectionSet, joined) {
				return true
			}
		default:
			return true
		}
	}
	return false
}

func deferred(ds ast.DirectiveList) bool { return ds.ForName("defer") != nil }
