// Telling an introspection-only query, for enforce with introspection allowed.

package trusteddocs

import (
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
)

// introspectionTokenLimit bounds the parse of an unlisted text: GraphiQL's
// introspection query has about 1,000 tokens.
const introspectionTokenLimit = 10000

// isIntrospection reports whether every operation of query is a query
// whose top-level selections (through fragments) are only __schema, __type
// and __typename; it parses without a schema, and what does not parse is
// not introspection.
func isIntrospection(query string) bool {
	doc, err := parser.ParseQueryWithTokenLimit(&ast.Source{Input: query}, introspectionTokenLimit)
	if err != nil || len(doc.Operations) == 0 {
		return false
	}
	for _, op := range doc.Operations {
		if op.Operation != ast.Query || !onlyMeta(op.SelectionSet, doc, map[string]bool{}) {
			return false
		}
	}
	return true
}

func onlyMeta(set ast.SelectionSet, doc *ast.QueryDocument, seen map[string]bool) bool {
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			if s.Name != "__schema" && s.Name != "__type" && s.Name != "__typename" {
				return false
			}
		case *ast.InlineFragment:
			if !onlyMeta(s.SelectionSet, doc, seen) {
				return false
			}
		case *ast.FragmentSpread:
			if seen[s.Name] {
				continue // a cycle: invalid, and refused by validation later
			}
			seen[s.Name] = true
			f := doc.Fragments.ForName(s.Name)
			if f == nil || !onlyMeta(f.SelectionSet, doc, seen) {
				return false
			}
		}
	}
	return true
}
