package graph

// This file is the executor's fast path for the objects a payments page
// is made of (Payment, Money, Customer, PaymentEdge). gqlgen's generated code resolves
// every field of every object through graphql.ResolveField: a field
// context, a context value, closures, the value boxed, a FieldSet, a
// deferred group and CollectFields per object: ≈ 125 of the ≈ 130
// allocations per payment of a list (docs/perf-log/2026-11-benchmarks.md, issue 14). Where an
// object's selection reaches only fields bound to the record (no
// resolver, no @defer, no directive but @skip/@include with literal
// arguments, no introspection but __typename), that machinery has
// nothing to do: no field can fail or block, and no field interceptor
// needs to see it (the fast path is on only when every field interceptor
// promises to pass bound fields through, PassesBoundFieldsThrough in
// server.go: observe's tracing spans only resolvers and root fields; the
// response budget and the scope checks are charged by resolvers).
// Such a selection is compiled once into a plan, with gqlgen's own
// CollectFields (the same merging of aliases and fragments, the same
// type conditions), and the plan writes the bytes gqlgen would write.
// Anything else returns nil, and gqlgen's generated code runs as before:
// graph/gen adds the call at the top of the generated _Payment, _Money,
// _Customer and _PaymentEdge. This file is the hand-written part: the
// plan compiler, the hooks and the string escapers. The per-type part
// (each field's op, the types' tables, marshalers and appenders) is
// generated from gqlgen's model of the schema into fast_gen.go by
// graph/gen (its fast.go), so a field added to these types needs no
// edit here. TestFastPathMatchesGqlgen and FuzzFastPathMatchesGqlgen
// run the same documents with the fast path on and off and compare the
// bytes.

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

	"paygraph/graph/model"
	"paygraph/graph/selcache"
	"paygraph/internal/swar"
)

// fastOp is what a plan writes for one field: the ops are generated
// (fast_gen.go), one per field of a type a plan may hold.
type fastOp uint8

// fastType is one object type the fast path knows: its name, the
// implementors gqlgen's CollectFields matches type conditions with, and
// the fields a plan may hold, with the type of their object value.
type fastType struct {
	name       string
	tag        string // the plans' key in fastPlans, when not name
	satisfies  []string
	ops        map[string]fastOp
	objectType map[fastOp]*fastType
}

// fastField is one field of a plan: key is the JSON before its value
// (`"alias":`, after a comma but for the first), lit the type name of
// __typename, sub the plan of an object value.
type fastField struct {
	key string
	op  fastOp
	lit string
	sub *fastPlan
	dix int // delegated: the field's index in paymentJSON.delegated
	// nodes: a delegated field's nodes, as paths of indexes from the
	// object's selection set (through inline fragments and fragment
	// definitions), whose selections CollectFields merges; so that the
	// field gqlgen resolves is rebuilt without a CollectFields per object.
	nodes [][]int32
}

// fastPlan is a compiled selection of one object type.
type fastPlan struct {
	fields    []fastField
	delegated int // fields left to gqlgen (at most maxDelegated, top level only)
	// customer: the plan writes a customer (its own or a nested plan's),
	// which an operation read below full customer data leaves to gqlgen
	// (package customerdata: its masked paths are noted where gqlgen has them).
	customer bool
}

// maxDelegated bounds the fields of a Payment plan that gqlgen marshals
// (customer selections reaching the address; more are aliases of it).
const maxDelegated = 2

// maxFastFields bounds the fields of one plan, nested ones included: a
// plan is kept for the process (fastPlans), so it must stay small. The
// largest plain selection of a Payment has 16 distinct fields; more means
// aliases of the same fields, which gqlgen then serves.
const maxFastFields = 64

// fastPlans keeps the plans (nil: a selection for gqlgen), per document,
// type and selection set (selcache).
var fastPlans selcache.Cache[*fastPlan]

// fastCompiled counts the plans compiled (the tests read it).
var fastCompiled atomic.Int64

// planFor returns the plan of sel for an object of type t in the
// operation oc, or nil when gqlgen must marshal it.
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

// compileFast compiles sel for an object of type t, or returns nil when
// any of it needs gqlgen's executor. budget counts the fields left.
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
		var key []byte
		if i > 0 {
			key = append(key, ',')
		}
		key = appendQuoted(key, f.Alias)
		ff := fastField{key: string(append(key, ':'))}
		if f.Name == "__typename" {
			ff.op, ff.lit = opTypename, t.name
		} else {
			op, ok := t.ops[f.Name]
			if t == fastCustomer && f.Name == "address" && top && p.delegated == 0 && len(f.Selections) == 0 {
				// One address per customer, as gqlgen's Dispatch runs a
				// single concurrent field: on the caller's goroutine.
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
// fragments, not into its fields' sub-selections, which compileFast
// checks in turn) is @skip or @include with a literal argument: what
// CollectFields then decides is the same for every request of the
// document, as a cached plan must be.
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

// fastEnabled reports whether the server was built with the fast path
// (ServerConfig.noFastPath turns it off, for the differential tests).
func (ec *executionContext) fastEnabled() bool {
	r, ok := ec.Resolvers.(*resolverRoot)
	return ok && !r.noFastPath
}

// fastPaymentObject, fastMoneyObject and fastCustomerObject are the
// hooks graph/gen adds to the generated _Payment, _Money and _Customer:
// a marshaler of obj for sel, or nil to let gqlgen's code run.
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
		// As gqlgen's _Payment does for these fields, in the same order
		// (the plan's other fields cannot fail): the same field contexts,
		// paths and errors, and a null payment when one is null.
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
		noteCustomer(ctx, ec.OperationContext, sel) // what the customer-data level hid
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
		// As gqlgen's _Customer does for its one concurrent field (its
		// Dispatch runs a single one on the calling goroutine, with
		// recoverToNull's recovery); the address is nullable.
		for i := range p.fields {
			if f := &p.fields[i]; f.op == opCustomerAddressGqlgen {
				m.delegated[f.dix] = ec.fastCustomerAddress(ctx, ec.collected(sel, f.nodes), obj)
			}
		}
	}
	return m
}

// fastPaymentCustomer is gqlgen's _Payment_customer (the same field
// context, result and marshalling, and the same recovery) without the
// resolver middleware, which, as for every plain field the fast path
// writes, has nothing to do for a field bound to the record (observe's
// tracing spans resolvers and root fields only).
func (ec *executionContext) fastPaymentCustomer(ctx context.Context, field graphql.CollectedField, obj *model.Payment) (res graphql.Marshaler) {
	c := obj.Customer()
	if c == nil {
		return ec._Payment_customer(ctx, field, obj) // its null error
	}
	fc, _ := ec.fieldContext_Payment_customer(ctx, field)
	ctx = graphql.WithFieldContext(ctx, fc)
	defer func() {
		if r := recover(); r != nil {
			ec.Error(ctx, ec.Recover(ctx, r))
			res = graphql.Null
		}
	}()
	fc.Result = c
	return ec._Customer(ctx, field.Selections, c)
}

// collected rebuilds the CollectedField of a delegated field from its
// nodes' paths in sel (fieldNodes), as CollectFields answers it.
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

// fieldNodes finds the field nodes of sel that CollectFields merged into
// f (an object of a type satisfying satisfies; literal @skip/@include
// only, see plainDirectives), as paths for collected, and checks the
// result against f itself: nil when they differ, and the plan is not
// made (gqlgen then runs).
func fieldNodes(oc *graphql.OperationContext, sel ast.SelectionSet, satisfies []string, f graphql.CollectedField) [][]int32 {
	var paths [][]int32
	visited := map[string]bool{}
	var walk func(sel ast.SelectionSet, prefix []int32)
	walk = func(sel ast.SelectionSet, prefix []int32) {
		for i, s := range sel {
			path := append(slices.Clip(prefix), int32(i))
			switch s := s.(type) {
			case *ast.Field:
				if s.Alias == f.Alias && literallyIncluded(s.Directives) {
					paths = append(paths, path)
				}
			case *ast.InlineFragment:
				if literallyIncluded(s.Directives) && conditionMatches(s.TypeCondition, satisfies) {
					walk(s.SelectionSet, path)
				}
			case *ast.FragmentSpread:
				if visited[s.Name] || !literallyIncluded(s.Directives) {
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
	ec := &executionContext{ExecutionContextState: &graphql.ExecutionContextState[ResolverRoot, DirectiveRoot, ComplexityRoot]{OperationContext: oc}}
	got := ec.collected(sel, paths)
	if got.Field != f.Field || len(got.Selections) != len(f.Selections) {
		return nil
	}
	for i := range got.Selections {
		if got.Selections[i] != f.Selections[i] {
			return nil
		}
	}
	return paths
}

// literallyIncluded evaluates @skip and @include with literal arguments
// (plainDirectives has refused any other) as CollectFields does.
func literallyIncluded(ds ast.DirectiveList) bool {
	skip, include := false, true
	if d := ds.ForName("skip"); d != nil {
		skip = literalIf(d)
	}
	if d := ds.ForName("include"); d != nil {
		include = literalIf(d)
	}
	return !skip && include
}

func literalIf(d *ast.Directive) bool {
	a := d.Arguments.ForName("if")
	return a != nil && a.Value != nil && a.Value.Raw == "true"
}

func conditionMatches(cond string, satisfies []string) bool {
	return cond == "" || slices.Contains(satisfies, cond)
}

func (ec *executionContext) fastCustomerAddress(ctx context.Context, field graphql.CollectedField, obj *model.Customer) (res graphql.Marshaler) {
	defer func() {
		if r := recover(); r != nil {
			ec.Error(ctx, ec.Recover(ctx, r))
			res = graphql.Null
		}
	}()
	return ec._Customer_address(ctx, field, obj)
}

// fastPaymentEdgeObject is the hook of the generated _PaymentEdge: an
// edge whose node is a plan of its own (a node selecting its customer's
// address is gqlgen's, with the edge).
func (ec *executionContext) fastPaymentEdgeObject(ctx context.Context, sel ast.SelectionSet, obj *model.PaymentEdge) graphql.Marshaler {
	if obj == nil || obj.Node == nil || obj.Node.Payment == nil || obj.Cursors == nil || !ec.fastEnabled() {
		return nil
	}
	if p := planFor(ec.OperationContext, fastPaymentEdge, sel); p != nil && !(p.customer && maskedPathsFrom(ctx) != nil) {
		return &paymentEdgeJSON{p: p, x: obj}
	}
	return nil
}

// spare returns an empty slice with at least n bytes of w's spare
// capacity when w is a bytes.Buffer (what gqlgen marshals into), else nil.
func spare(w io.Writer, n int) []byte {
	if bw, ok := w.(*bytes.Buffer); ok {
		bw.Grow(n)
		return bw.AvailableBuffer()
	}
	return nil
}

const hexDigits = "0123456789ABCDEF" // upper case, as gqlgen's encodeHex

// appendQuoted appends s quoted and escaped exactly as gqlgen's
// writeQuotedString (graphql/string.go, v0.17.98) writes it: \t \r \n
// \\ \" by name, other control characters as \u00XX (upper-case hex),
// everything else (invalid UTF-8 too) as it is.
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
// writes it (strconv.Quote of its name).
func appendEnum(b []byte, s string) []byte {
	// strconv.Quote (gqlgen's enum MarshalGQL) escapes DEL as \x7f,
	// which JSON strings may hold as it is: only then are the bytes the
	// same (FuzzFastPathMatchesGqlgen found it).
	if swar.PlainString(s) && strings.IndexByte(s, 0x7f) < 0 {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	return strconv.AppendQuote(b, s)
}
