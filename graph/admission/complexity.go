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
	// MaxNodes bounds nodes(ids:), so a query cannot fan out unboundedly.
	MaxNodes = 100
)

// restCalls is the complexity of an operation: the REST calls answering it
// can make, counted on the validated operation with its variables,
// fragments expanded wherever they are spread:
//
//   - payments: 1 page (2 with after: a cursor in the middle of a REST page
//     needs the rest of that page and the next), plus first (default 20,
//     0..100) payment details when its items select customer.address,
//     which the REST list omits. The details are counted once a list
//     however many times edges and nodes select the address: they are the
//     same payments, which the loader fetches once. None are counted
//     when the caller's customer-data level withholds the address
//     (restCallsAt): it is null, and never fetched.
//   - payment, paymentLink, node: 1.
//   - checkoutSession: 1, plus 1 when it selects its payment.
//   - nodes(ids): one per id (at most 100: more is refused by the field).
//   - everything else (the fields of a record, introspection): 0.
//
// It is an upper bound in one respect: identical fields (the same id
// asked twice, two identical lists) are counted each time, although the
// loaders make each distinct call once a request (the estimate charged
// to the REST-call budget and shown in the cost receipt counts them once:
// costplan.go). A list reads no more pages than counted here, even from a
// REST API answering short pages (query.go).
func restCalls(doc *ast.QueryDocument, op *ast.OperationDefinition, vars map[string]any) int {
	return restCallsAt(doc, op, vars, false)
}

// restCallsAt is restCalls for a caller whose level withholds the
// address (noAddress) or not.
func restCallsAt(doc *ast.QueryDocument, op *ast.OperationDefinition, vars map[string]any, noAddress bool) int {
	e := estimate{doc: doc, vars: vars, onPath: map[string]bool{}, noAddress: noAddress}
	calls := 0
	e.eachField(op.SelectionSet, func(f *ast.Field) {
		calls += e.rootField(f)
	})
	return calls
}

// rootRESTCalls is a lower bound of restCalls that needs no validation:
// the calls of the operation's root fields that cost the same whatever they
// select (payments' page, payment, paymentLink, node, checkoutSession, the
// ids of nodes), from the raw variables, fragments at the root not
// followed. Every call it counts restCalls counts too, so refusing on it
// never refuses what the full estimate would serve.
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
			if a := f.Arguments.ForName("ids"); a != nil && a.Value != nil {
				calls += min(rawListLen(a.Value, vars), MaxNodes)
			}
		}
	}
	return calls
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
	doc    *ast.QueryDocument
	vars   map[string]any
	onPath map[string]bool // fragments being expanded (validation refused cycles; this is a guard)
	// noAddress: the caller's level withholds customer.address.
	noAddress bool
}

func (e *estimate) rootField(f *ast.Field) int {
	if f.ObjectDefinition == nil || f.ObjectDefinition.Name != "Query" {
		return 0 // introspection
	}
	switch f.Name {
	case "payments":
		args := f.ArgumentMap(e.vars)
		n := DefaultFirst
		if v, ok := intValue(args["first"]); ok {
			// Out-of-range values are refused by the resolver with
			// BAD_USER_INPUT; clamp so that the error says so.
			n = int(min(max(v, 0), MaxFirst))
		}
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
		// More than MaxNodes is refused by the resolver with BAD_USER_INPUT.
		return min(listLen(f.ArgumentMap(e.vars)["ids"]), MaxNodes)
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
// fragment spreads flattened.
func (e *estimate) eachField(set ast.SelectionSet, fn func(*ast.Field)) {
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			fn(s)
		case *ast.InlineFragment:
			e.eachField(s.SelectionSet, fn)
		case *ast.FragmentSpread:
			f := e.doc.Fragments.ForName(s.Name)
			if f == nil || e.onPath[s.Name] {
				continue
			}
			e.onPath[s.Name] = true
			e.eachField(f.SelectionSet, fn)
			delete(e.onPath, s.Name)
		}
	}
}

// listLen is the length of a list argument: []any from a literal or JSON,
// another slice type where gqlparser coerced a single value into a list,
// or one value a literal gave for the list.
func listLen(v any) int {
	if v == nil {
		return 0
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Slice {
		return rv.Len()
	}
	return 1
}

// intValue reads an Int argument as gqlparser gives it: int64 from a
// literal, json.Number (or another number type) from a variable.
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
