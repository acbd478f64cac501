package graph

// The executor's fast path for the objects of a payments page. gqlgen
// resolves every field through graphql.ResolveField (a field context,
// closures, a boxed value, a FieldSet per object), which a field bound to
// the record does not need: it cannot fail or block, and every field
// interceptor passes it through (PassesBoundFieldsThrough). So a selection
// of bound fields only (no resolver, no @defer, only literal @skip and
// @include, no introspection but __typename) is compiled once into a plan
// that writes gqlgen's bytes; anything else is gqlgen's. graph/gen adds the
// hooks and writes the per-type part (fast_gen.go). TestFastPathMatchesGqlgen
// and FuzzFastPathMatchesGqlgen compare the bytes.

import (
	"bytes"
	"cmp"
	"context"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"paygraph/graph/admission"
	"paygraph/graph/model"
	"paygraph/graph/selcache"
	"paygraph/internal/swar"
)

// fastOp is what a plan writes for one field (one per field, fast_gen.go).
type fastOp uint8

// fastType is an object type the fast path knows: its implementors (for
// CollectFields), the fields a plan may hold and their object values' types.
type fastType struct {
	name       string
	tag        string // the plans' key in fastPlans, when not name
	satisfies  []string
	ops        map[string]fastOp
	objectType map[fastOp]*fastType
}

// fastField is one field of a plan: key is `"alias":` (after a comma but
// for the first), lit the type name of __typename, sub an object's plan.
type fastField struct {
	key   string
	op    fastOp
	lit   string
	sub   *fastPlan
	dix   int       // delegated: the field's index in paymentJSON.delegated
	nodes [][]int32 // a delegated field's nodes, as index paths for collected
}

// fastPlan is a compiled selection of one object type.
type fastPlan struct {
	fields    []fastField
	delegated int // fields left to gqlgen (at most maxDelegated, top level only)
	// customer: the plan (or a nested one) writes a customer, which gqlgen
	// writes below full customer data (noting the masked paths).
	customer bool
}

// maxDelegated bounds the fields of a Payment plan gqlgen marshals.
const maxDelegated = 2

// maxFastFields bounds a plan's fields, nested ones included, as plans are
// kept for the process; beyond it gqlgen serves.
const maxFastFields = 64

// fastPlans keeps the plans (nil: for gqlgen) per document, type and selection set.
var fastPlans selcache.Cache[*fastPlan]

// fastCompiled counts the plans compiled, for tests.
var fastCompiled atomic.Int64

// planFor returns the plan of sel for an object of type t, or nil for gqlgen.
func planFor(oc *graphql.OperationContext, t *fastType, sel ast.SelectionSet) *fastPlan {
	if oc == nil || len(sel) == 0 {
		return nil
	}
	p, _ := fastPlans.Get(oc.Doc, cmp.Or(t.tag, t.name), nil, sel, func() *fastPlan {
		budget := maxFastFields
		p := compileFast(oc, t, sel, &budget, true)
		if p != nil {
			fastCompiled.Add(1)
		}
		return p
	})
	return p
}

// compileFast compiles sel for an object of type t, or nil when any of it
// needs gqlgen. budget counts the fields left.
func compileFast(oc *graphql.OperationContext, t *fastType, sel ast.SelectionSet, budget *int, top bool) *fastPlan {
	if !plainDirectives(oc, sel, 0) {
		return nil
	}
	fields := graphql.CollectFields(oc, sel, t.satisfies)
	if len(fields) == 0 {
		return nil
	}
	p := &fastPlan{fields: make([]fastField, 0, len(fields))}
	for i, f := range fields {
		if *budget--; *budget < 0 || len(f.Deferrables) > 0 {
			return nil
		}
		ff := fastField{key: fieldKey(i, f.Alias)}
		if f.Name == "__typename" {
			ff.op, ff.lit = opTypename, t.name
		} else {
			op, ok := t.ops[f.Name]
			if t == fastCustomer && f.Name == "address" && top && p.delegated == 0 && len(f.Selections) == 0 {
				// One address, as gqlgen's Dispatch runs a single
				// concurrent field: on the caller's goroutine.
				if ff.nodes = fieldNodes(oc, sel, t.satisfies, f); ff.nodes == nil {
					return nil
				}
				op, ok = opCustomerAddressGqlgen, true
				p.delegated++
			}
			if !ok {
				return nil // a resolver, another introspection field, or unknown
			}
			ff.op = op
			p.customer = p.customer || op == opPaymentCustomer
			if sub := t.objectType[op]; sub != nil {
				if ff.sub = compileFast(oc, sub, f.Selections, budget, false); ff.sub == nil {
					// The customer's selection reaches its address: gqlgen
					// marshals that field, the plan the others.
					if op != opPaymentCustomer || !top || p.delegated == maxDelegated {
						return nil
					}
					if ff.nodes = fieldNodes(oc, sel, t.satisfies, f); ff.nodes == nil {
						return nil
					}
					ff.op, ff.dix = opPaymentCustomerGqlgen, p.delegated
					p.delegated++
				}
				if ff.sub != nil && ff.sub.customer {
					p.customer = true
				}
			} else if len(f.Selections) > 0 {
				return nil
			}
		}
		p.fields = append(p.fields, ff)
	}
	return p
}

// plainDirectives reports whether every directive in sel (through its
// fragments, not into sub-selections) is @skip or @include with a literal
// argument, so that CollectFields decides alike for every request.
func plainDirectives(oc *graphql.OperationContext, sel ast.SelectionSet, depth int) bool {
	if depth > 32 { // fragments nest no deeper in a valid document; be safe
		return false
	}
	for _, s := range sel {
		switch s := s.(type) {
		case *ast.Field:
			if !literalSkipInclude(s.Directives) {
				return false
			}
		case *ast.InlineFragment:
			if !literalSkipInclude(s.Directives) || !plainDirectives(oc, s.SelectionSet, depth+1) {
				return false
			}
		case *ast.FragmentSpread:
			def := oc.Doc.Fragments.ForName(s.Name)
			if def == nil || !literalSkipInclude(s.Directives) || !literalSkipInclude(def.Directives) ||
				!plainDirectives(oc, def.SelectionSet, depth+1) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func literalSkipInclude(ds ast.DirectiveList) bool {
	for _, d := range ds {
		if d.Name != "skip" && d.Name != "include" {
			return false
		}
		for _, a := range d.Arguments {
			if a.Value == nil || a.Value.Kind != ast.BooleanValue {
				return false
			}
		}
	}
	return true
}

// fastEnabled reports whether the server was built with the fast path.
func (ec *executionContext) fastEnabled() bool {
	r, ok := ec.Resolvers.(*resolverRoot)
	return ok && !r.noFastPath
}

// fastPaymentObject, fastMoneyObject and fastCustomerObject, graph/gen's
// hooks in _Payment, _Money and _Customer: a marshaler, or nil for gqlgen.
func (ec *executionContext) fastPaymentObject(ctx context.Context, sel ast.SelectionSet, obj *model.Payment) graphql.Marshaler {
	if obj == nil || obj.Payment == nil || !ec.fastEnabled() {
		return nil
	}
	p := planFor(ec.OperationContext, fastPayment, sel)
	if p == nil || p.customer && maskedPathsFrom(ctx) != nil {
		return nil
	}
	m := &paymentJSON{p: p, x: obj}
	if p.delegated > 0 {
		// As gqlgen's _Payment, in order (the others cannot fail): a null
		// payment when one is null.
		for i := range p.fields {
			if f := &p.fields[i]; f.op == opPaymentCustomerGqlgen {
				v := ec.fastPaymentCustomer(ctx, ec.collected(sel, f.nodes), obj)
				if v == graphql.Null {
					return graphql.Null
				}
				m.delegated[f.dix] = v
			}
		}
	}
	return m
}

func (ec *executionContext) fastMoneyObject(_ context.Context, sel ast.SelectionSet, obj *model.Money) graphql.Marshaler {
	if obj == nil || !ec.fastEnabled() {
		return nil
	}
	if p := planFor(ec.OperationContext, fastMoney, sel); p != nil {
		return &moneyJSON{p: p, x: obj}
	}
	return nil
}

func (ec *executionContext) fastCustomerObject(ctx context.Context, sel ast.SelectionSet, obj *model.Customer) graphql.Marshaler {
	if obj != nil {
		if m := maskedPathsFrom(ctx); m != nil {
			m.Note(ctx, ec.OperationContext, sel) // what the customer-data level hid
		}
	}
	if obj == nil || !ec.fastEnabled() {
		return nil
	}
	p := planFor(ec.OperationContext, fastCustomer, sel)
	if p == nil {
		return nil
	}
	m := &customerJSON{p: p, x: obj}
	if p.delegated > 0 {
		// As gqlgen's _Customer runs its one concurrent field: here,
		// recovered to null (the address is nullable).
		for i := range p.fields {
			if f := &p.fields[i]; f.op == opCustomerAddressGqlgen {
				m.delegated[f.dix] = ec.fastCustomerAddress(ctx, ec.collected(sel, f.nodes), obj)
			}
		}
	}
	return m
}

// fastPaymentCustomer is gqlgen's _Payment_customer without the resolver
// middleware, which has nothing to do for a field bound to the record.
func (ec *executionContext) fastPaymentCustomer(ctx context.Context, field graphql.CollectedField, obj *model.Payment) (res graphql.Marshaler) {
	c := obj.Customer()
	if c == nil {
		return ec._Payment_customer(ctx, field, obj) // its null error
	}
	fc, _ := ec.fieldContext_Payment_customer(ctx, field)
	ctx = graphql.WithFieldContext(ctx, fc)
	defer ec.recoverNull(ctx, &res)
	fc.Result = c
	return ec._Customer(ctx, field.Selections, c)
}

// collected rebuilds a delegated field from its nodes' paths (fieldNodes).
func (ec *executionContext) collected(sel ast.SelectionSet, paths [][]int32) graphql.CollectedField {
	f := graphql.CollectedField{IsNonDeferrable: true}
	for _, path := range paths {
		node := ec.nodeAt(sel, path)
		if f.Field == nil {
			f.Field, f.Selections = node, node.SelectionSet
		} else {
			if len(f.Selections) == len(f.Field.SelectionSet) {
				f.Selections = slices.Clip(f.Selections) // never append into the document's own
			}
			f.Selections = append(f.Selections, node.SelectionSet...)
		}
	}
	return f
}

// nodeAt follows path from sel to a field node (nil: not one).
func (ec *executionContext) nodeAt(sel ast.SelectionSet, path []int32) *ast.Field {
	for _, i := range path[:len(path)-1] {
		switch s := sel[i].(type) {
		case *ast.InlineFragment:
			sel = s.SelectionSet
		case *ast.FragmentSpread:
			sel = ec.Doc.Fragments.ForName(s.Name).SelectionSet
		}
	}
	f, _ := sel[path[len(path)-1]].(*ast.Field)
	return f
}

// fieldNodes returns the paths of sel's field nodes CollectFields merged
// into f, or nil when collected rebuilds from them something else.
func fieldNodes(oc *graphql.OperationContext, sel ast.SelectionSet, satisfies []string, f graphql.CollectedField) [][]int32 {
	var paths [][]int32
	visited := map[string]bool{}
	var walk func(sel ast.SelectionSet, prefix []int32)
	walk = func(sel ast.SelectionSet, prefix []int32) {
		for i, s := range sel {
			path := append(slices.Clip(prefix), int32(i))
			switch s := s.(type) {
			case *ast.Field:
				if s.Alias == f.Alias && admission.Included(s.Directives, nil) {
					paths = append(paths, path)
				}
			case *ast.InlineFragment:
				if admission.Included(s.Directives, nil) && conditionMatches(s.TypeCondition, satisfies) {
					walk(s.SelectionSet, path)
				}
			case *ast.FragmentSpread:
				if visited[s.Name] || !admission.Included(s.Directives, nil) {
					continue
				}
				visited[s.Name] = true
				if def := oc.Doc.Fragments.ForName(s.Name); def != nil && conditionMatches(def.TypeCondition, satisfies) {
					walk(def.SelectionSet, path)
				}
			}
		}
	}
	walk(sel, nil)
	if len(paths) == 0 {
		return nil
	}
	// The check: the same first node and the same merged selections.
	got := argsContext(oc).collected(sel, paths)
	if got.Field != f.Field || !slices.Equal(got.Selections, f.Selections) {
		return nil
	}
	return paths
}

func conditionMatches(cond string, satisfies []string) bool {
	return cond == "" || slices.Contains(satisfies, cond)
}

func (ec *executionContext) fastCustomerAddress(ctx context.Context, field graphql.CollectedField, obj *model.Customer) (res graphql.Marshaler) {
	defer ec.recoverNull(ctx, &res)
	return ec._Customer_address(ctx, field, obj)
}

// recoverNull is gqlgen's recovery of a field (deferred directly).
func (ec *executionContext) recoverNull(ctx context.Context, res *graphql.Marshaler) {
	if r := recover(); r != nil {
		ec.Error(ctx, ec.Recover(ctx, r))
		*res = graphql.Null
	}
}

// fastPaymentEdgeObject is the hook of the generated _PaymentEdge.
func (ec *executionContext) fastPaymentEdgeObject(ctx context.Context, sel ast.SelectionSet, obj *model.PaymentEdge) graphql.Marshaler {
	if obj == nil || obj.Node == nil || obj.Node.Payment == nil || obj.Cursors == nil || !ec.fastEnabled() {
		return nil
	}
	if p := planFor(ec.OperationContext, fastPaymentEdge, sel); p != nil && !(p.customer && maskedPathsFrom(ctx) != nil) {
		return &paymentEdgeJSON{p: p, x: obj}
	}
	return nil
}

// spare returns an empty slice of at least n bytes of w's spare capacity
// when w is a bytes.Buffer (gqlgen's is), else nil.
func spare(w io.Writer, n int) []byte {
	if bw, ok := w.(*bytes.Buffer); ok {
		bw.Grow(n)
		return bw.AvailableBuffer()
	}
	return nil
}

const hexDigits = "0123456789ABCDEF" // upper case, as gqlgen's encodeHex

// appendQuoted appends s as gqlgen's writeQuotedString writes it: \t \r \n
// \\ \" by name, other control characters as \u00XX, the rest as it is.
func appendQuoted(b []byte, s string) []byte {
	b = append(b, '"')
	if swar.PlainString(s) {
		b = append(b, s...)
		return append(b, '"')
	}
	start := 0
	for i, c := range s {
		if c < 0x20 || c == '\\' || c == '"' {
			b = append(b, s[start:i]...)
			switch c {
			case '\t':
				b = append(b, `\t`...)
			case '\r':
				b = append(b, `\r`...)
			case '\n':
				b = append(b, `\n`...)
			case '\\':
				b = append(b, `\\`...)
			case '"':
				b = append(b, `\"`...)
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			start = i + 1
		}
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendEnum appends an enum value as gqlgen's generated MarshalGQL
// writes it: strconv.Quote, which escapes DEL too, unlike JSON.
func appendEnum(b []byte, s string) []byte {
	if swar.PlainString(s) && strings.IndexByte(s, 0x7f) < 0 {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	return strconv.AppendQuote(b, s)
}
