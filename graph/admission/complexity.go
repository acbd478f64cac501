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
	// MaxNodes bounds nodes(ids:) and one _entities field's representations.
	MaxNodes = 100
)

// restCallsAt is an operation's complexity: the REST calls answering it
// can make, fragments expanded at each spread and identical fields counted
// each time (docs/design.md); noAddress: the level withholds the address.
func restCallsAt(doc *ast.QueryDocument, op *ast.OperationDefinition, vars map[string]any, noAddress bool) int {
	e := estimate{doc: doc, vars: vars, noAddress: noAddress}
	calls := 0
	e.eachField(op.SelectionSet, func(f *ast.Field) {
		calls += e.rootField(f)
	})
	return calls
}

// rootRESTCalls is a lower bound of restCallsAt that needs no validation:
// the root fields that cost the same whatever they select, from the raw
// variables, so refusing on it never refuses what restCallsAt would serve.
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

// rawArgLen is the length of f's list argument name before validation: a
// literal list or a variable's JSON array (else 0: validation reports it).
func rawArgLen(f *ast.Field, name string, vars map[string]any) int {
	a := f.Arguments.ForName(name)
	if a == nil || a.Value == nil {
		return 0
	}
	switch a.Value.Kind {
	case ast.ListValue:
		return len(a.Value.Children)
	case ast.Variable:
		l, _ := vars[a.Value.Raw].([]any)
		return len(l)
	}
	return 0
}

// overEntities is the representations of the first _entities root field
// with more than MaxNodes (0: none), refused before their coercion.
func overEntities(doc *ast.QueryDocument, opName string, vars map[string]any) int {
	op := doc.Operations.ForName(opName) // the only one when unnamed
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

type estimate struct {
	doc        *ast.QueryDocument
	vars       map[string]any
	onPath     map[string]bool // fragments being expanded (a guard: validation refuses cycles)
	noAddress  bool            // the caller's level withholds customer.address
	directives bool            // leave out what @skip and @include do (the plan's walk)
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
		// A representation is one call, a session's payment one more.
		n := listLen(f.ArgumentMap(e.vars)["representations"])
		if e.selects(f.SelectionSet, "CheckoutSession", "payment") {
			n *= 2
		}
		return n
	}
	return 0
}

// selects reports whether set selects, at any depth, the field name of type typeName.
func (e *estimate) selects(set ast.SelectionSet, typeName, name string) bool {
	found := false
	e.eachField(set, func(f *ast.Field) {
		found = found || f.Name == name && f.ObjectDefinition != nil && f.ObjectDefinition.Name == typeName ||
			e.selects(f.SelectionSet, typeName, name)
	})
	return found
}

// eachField calls fn with every field of set, fragments flattened; with
// e.directives, without what @skip or @include leave out.
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

// firstOf is payments' first, clamped (the resolver refuses it out of range),
// read as gqlparser gives it: int64 from a literal, json.Number or another
// number type from a variable.
func firstOf(args map[string]any) int {
	var v int64
	switch n := args["first"].(type) {
	case int64:
		v = n
	case int:
		v = int64(n)
	case int32:
		v = int64(n)
	case float64:
		v = int64(n)
	case json.Number:
		var err error
		if v, err = n.Int64(); err != nil {
			return DefaultFirst
		}
	default:
		return DefaultFirst
	}
	return int(min(max(v, 0), MaxFirst))
}

// listLen is a list argument's length: any slice, or one value coerced into a list.
func listLen(v any) int {
	if v == nil {
		return 0
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Slice {
		return rv.Len()
	}
	return 1
}
