package admission

import (
	"encoding/json"
	"reflect"

	"github.com/vektah/gqlparser/v2/ast"
)

// The schema's bounds, which the resolvers enforce and the estimate counts by.
const (
	DefaultFirst = 20  // payments' first when the query gives none
	MaxFirst     = 100 // payments' largest first
	RESTMaxLimit = 100 // the REST API's largest page
	// MaxNodes bounds nodes(ids:), so a query cannot fan out unboundedly;
	// and the representations of one _entities field (the subgraph mode).
	MaxNodes = 100
)

// restCallsAt is the complexity of an operation: the REST calls answering
// it can make, on the validated operation with its variables, fragments
// expanded at each spread, identical fields counted each time (the table
// in docs/design.md); noAddress: the caller's level withholds the address.
func restCallsAt(doc *ast.QueryDocument, op *ast.OperationDefinition, vars map[string]any, noAddress bool) int {
	e := estimate{doc: doc, vars: vars, noAddress: noAddress}
	calls := 0
	e.eachField(op.SelectionSet, func(f *ast.Field) {
		calls += e.rootField(f)
	})
	return calls
}

// rootRESTCalls is a lower bound of restCallsAt that needs no validation:
// the calls of the root fields that cost the same whatever they select,
// from the raw variables, fragments at the root not followed; refusing on
// it never refuses what the full estimate would serve.
func rootRESTCalls(doc *ast.QueryDocument, opName string, vars map[string]any) int {
	var op *ast.OperationDefinition
	switch {
	case opName != "":
		op = doc.Operations.ForName(opName)
	case len(doc.Operations) == 1:
		op = doc.Operations[0]
	}
	if op == nil || op.Operation != ast.Query {
		return 0 // gqlgen refuses it, or it is not ours to count
	}
	calls := 0
	for _, sel := range op.SelectionSet {
		f, ok := sel.(*ast.Field)
		if !ok {
			continue
		}
		switch f.Name {
		case "payments", "payment", "paymentLink", "node", "checkoutSession":
			calls++
		case "nodes":
			calls += min(rawArgLen(f, "ids", vars), MaxNodes)
		case "_entities":
			calls += rawArgLen(f, "representations", vars)
		}
	}
	return calls
}

// rawArgLen is rawListLen of f's argument name (0 when none).
func rawArgLen(f *ast.Field, name string, vars map[string]any) int {
	if a := f.Arguments.ForName(name); a != nil && a.Value != nil {
		return rawListLen(a.Value, vars)
	}
	return 0
}

// overEntities is the number of representations of the first _entities
// root field of doc's operation that has more than MaxNodes (0: none):
// refused before validation, so that a router's batch over the cap costs
// no REST call and no coercion of its representations.
func overEntities(doc *ast.QueryDocument, opName string, vars map[string]any) int {
	op := doc.Operations.ForName(opName)
	if op == nil && opName == "" && len(doc.Operations) == 1 {
		op = doc.Operations[0]
	}
	if op == nil {
		return 0
	}
	for _, sel := range op.SelectionSet {
		if f, ok := sel.(*ast.Field); ok && f.Name == "_entities" {
			if n := rawArgLen(f, "representations", vars); n > MaxNodes {
				return n
			}
		}
	}
	return 0
}

// rawListLen is the length of a list argument before validation: a
// literal list, or a variable's JSON array (0 when it is anything else:
// validation reports that).
func rawListLen(v *ast.Value, vars map[string]any) int {
	switch v.Kind {
	case ast.ListValue:
		return len(v.Children)
	case ast.Variable:
		if l, ok := vars[v.Raw].([]any); ok {
			return len(l)
		}
	}
	return 0
}

type estimate struct {
	doc       *ast.QueryDocument
	vars      map[string]any
	onPath    map[string]bool // fragments being expanded (a guard: validation refuses cycles)
	noAddress bool            // the caller's level withholds customer.address
	// directives: leave out what @skip and @include do (the plan's walk).
	directives bool
}

func (e *estimate) rootField(f *ast.Field) int {
	if f.ObjectDefinition == nil || f.ObjectDefinition.Name != "Query" {
		return 0 // introspection
	}
	switch f.Name {
	case "payments":
		args := f.ArgumentMap(e.vars)
		n := firstOf(args)
		calls := 1
		if args["after"] != nil {
			calls = 2
		}
		if !e.noAddress && e.selects(f.SelectionSet, "Customer", "address") {
			calls += n
		}
		return calls
	case "payment", "paymentLink", "node":
		return 1
	case "checkoutSession":
		if e.selects(f.SelectionSet, "CheckoutSession", "payment") {
			return 2
		}
		return 1
	case "nodes":
		return min(listLen(f.ArgumentMap(e.vars)["ids"]), MaxNodes)
	case "_entities":
		// Each representation is at most one REST call (a checkout
		// session's payment: one more), as nodes' ids.
		n := listLen(f.ArgumentMap(e.vars)["representations"])
		if e.selects(f.SelectionSet, "CheckoutSession", "payment") {
			n *= 2
		}
		return n
	}
	return 0
}

// selects reports whether set selects, at any depth, the field name of
// the type typeName.
func (e *estimate) selects(set ast.SelectionSet, typeName, name string) bool {
	found := false
	e.eachField(set, func(f *ast.Field) {
		if found {
			return
		}
		if f.Name == name && f.ObjectDefinition != nil && f.ObjectDefinition.Name == typeName {
			found = true
			return
		}
		found = e.selects(f.SelectionSet, typeName, name)
	})
	return found
}

// eachField calls fn with every field of set, inline fragments and
// fragment spreads flattened; with e.directives, without what @skip or
// @include leave out (the complexity counts them: they are work).
func (e *estimate) eachField(set ast.SelectionSet, fn func(*ast.Field)) {
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			if !e.directives || Included(s.Directives, e.vars) {
				fn(s)
			}
		case *ast.InlineFragment:
			if !e.directives || Included(s.Directives, e.vars) {
				e.eachField(s.SelectionSet, fn)
			}
		case *ast.FragmentSpread:
			f := e.doc.Fragments.ForName(s.Name)
			if f == nil || e.onPath[s.Name] || e.directives && !Included(s.Directives, e.vars) {
				continue
			}
			if e.onPath == nil {
				e.onPath = map[string]bool{}
			}
			e.onPath[s.Name] = true
			e.eachField(f.SelectionSet, fn)
			delete(e.onPath, s.Name)
		}
	}
}

// firstOf is payments' first, clamped: out of range is refused by the
// resolver (BAD_USER_INPUT).
func firstOf(args map[string]any) int {
	if v, ok := intValue(args["first"]); ok {
		return int(min(max(v, 0), MaxFirst))
	}
	return DefaultFirst
}

// listLen is the length of a list argument: any slice, or one value
// gqlparser coerced into a list.
func listLen(v any) int {
	if v == nil {
		return 0
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Slice {
		return rv.Len()
	}
	return 1
}

// intValue reads an Int argument as gqlparser gives it (int64 from a
// literal, json.Number or another number type from a variable).
func intValue(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int:
		return int64(n), true
	case int32:
		return int64(n), true
	case float64:
		return int64(n), true
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	}
	return 0, false
}
