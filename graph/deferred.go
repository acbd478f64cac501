package graph

// Deferred fields left out of the initial payload, as incremental delivery
// says, where gqlgen writes them as null (a client then takes the object as
// complete). graph/gen points the generated object marshallers here.

import (
	"context"
	"io"

	"github.com/99designs/gqlgen/graphql"
)

// deferredField is the value of a field gqlgen deferred, in its object's
// field set: skipped by withoutDeferred, null elsewhere, as gqlgen's was.
type deferredField struct{}

func (deferredField) MarshalGQL(w io.Writer) { io.WriteString(w, "null") }

// resolveConcurrently is gqlgen's FieldSet.ResolveConcurrently, marking
// field i when gqlgen deferred it (added it to the deferred group).
func resolveConcurrently(out *graphql.FieldSet, oc *graphql.OperationContext, deferred *graphql.DeferredGroup, i int,
	recoverFromPanic, nonNull bool, resolve func(context.Context) graphql.Marshaler) {
	n := len(deferred.FieldSet.Values)
	out.ResolveConcurrently(oc, deferred, i, recoverFromPanic, nonNull, resolve)
	if len(deferred.FieldSet.Values) > n {
		out.Values[i] = deferredField{}
	}
}

// withoutDeferred writes out as gqlgen's FieldSet does (each response name
// once, in order) without the fields it deferred; fields are out's.
func withoutDeferred(out *graphql.FieldSet, fields []graphql.CollectedField) graphql.Marshaler {
	return graphql.WriterFunc(func(w io.Writer) {
		io.WriteString(w, "{")
		written := make(map[string]struct{}, len(fields))
		first := true
		for i := range fields {
			alias := fields[i].Alias
			if _, ok := written[alias]; ok {
				continue
			}
			written[alias] = struct{}{}
			if _, ok := out.Values[i].(deferredField); ok {
				continue
			}
			if !first {
				io.WriteString(w, ",")
			}
			first = false
			graphql.MarshalString(alias).MarshalGQL(w)
			io.WriteString(w, ":")
			out.Values[i].MarshalGQL(w)
		}
		io.WriteString(w, "}")
	})
}
