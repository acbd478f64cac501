package loaders

import (
	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"paygraph/graph/admission"
)

// JoinsAddress reports whether sel reaches Customer.address outside @defer,
// with what @skip and @include leave.
func JoinsAddress(oc *graphql.OperationContext, sel ast.SelectionSet) bool {
	return joins(oc, sel, 0)
}

func joins(oc *graphql.OperationContext, set ast.SelectionSet, depth int) bool {
	if depth > maxJoinDepth {
		return false
	}
	for _, s := range set {
		switch s := s.(type) {
		case *ast.Field:
			address := s.Name == "address" && s.ObjectDefinition != nil && s.ObjectDefinition.Name == "Customer"
			if admission.Included(s.Directives, oc.Variables) && (address || joins(oc, s.SelectionSet, depth+1)) {
				return true
			}
		case *ast.InlineFragment:
			if s.Directives.ForName("defer") == nil && admission.Included(s.Directives, oc.Variables) && joins(oc, s.SelectionSet, depth+1) {
				return true
			}
		case *ast.FragmentSpread:
			f := oc.Doc.Fragments.ForName(s.Name)
			if f != nil && s.Directives.ForName("defer") == nil && admission.Included(s.Directives, oc.Variables) && joins(oc, f.SelectionSet, depth+1) {
				return true
			}
		}
	}
	return false
}

// maxJoinDepth bounds the walk, a guard (validation refuses fragment
// cycles; the address is at depth 3 plus fragments).
const maxJoinDepth = 32
