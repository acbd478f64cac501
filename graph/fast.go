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
// _Customer and _PaymentEdge. TestFastPathMatchesGqlgen and FuzzFastPathMatchesGqlgen
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
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"paygraph/graph/model"
	"paygraph/graph/scalar"
)

// fastOp is what a plan writes for one field.
type fastOp uint8

const (
	opTypename fastOp = iota // the object's type name
	// Payment
	opPayID
	opPayStatus
	opPayAmount // sub: Money
	opPayTransactionID
	opPayPaymentMethod
	opPayCustomer // sub: Customer
	// opPayCustomerGqlgen: a customer whose selection reaches its address
	// resolver: gqlgen's _Payment_customer marshals it, when the payment
	// is (delegated).
	opPayCustomerGqlgen
	opPayCreatedAt
	opPayUpdatedAt
	// Money
	opMoneyAmount
	opMoneyPaisa
	opMoneyCurrency
	// Customer (address is a resolver: never in a plan)
	opCustName
	opCustEmail
	opCustPhone
	opCustCity
	// opCustAddressGqlgen: the address resolver, which gqlgen's
	// _Customer_address resolves when the customer is marshalled (a
	// customer plan of its own, not inside a payment's: that one has no
	// field context of the customer for the address's path and errors).
	opCustAddressGqlgen
	// opCustAddressDetail: the address of a payment's detail record, which
	// holds it (AddressOf empty): the address resolver only returns it.
	// Only the root fast path's plans hold it (fastPaymentDetail).
	opCustAddressDetail
	// PaymentEdge
	opEdgeCursor
	opEdgeNode // sub: Payment
)

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

var (
	fastMoney = &fastType{name: "Money", satisfies: moneyImplementors,
		ops: map[string]fastOp{"amount": opMoneyAmount, "paisa": opMoneyPaisa, "currency": opMoneyCurrency}}
	fastCustomer = &fastType{name: "Customer", satisfies: customerImplementors,
		ops: map[string]fastOp{"name": opCustName, "email": opCustEmail, "phone": opCustPhone, "city": opCustCity}}
	fastPayment = &fastType{name: "Payment", satisfies: paymentImplementors,
		ops: map[string]fastOp{"id": opPayID, "status": opPayStatus, "amount": opPayAmount,
			"transactionId": opPayTransactionID, "paymentMethod": opPayPaymentMethod, "customer": opPayCustomer,
			"createdAt": opPayCreatedAt, "updatedAt": opPayUpdatedAt},
		objectType: map[fastOp]*fastType{opPayAmount: fastMoney, opPayCustomer: fastCustomer}}
	// The same for the root fast path (rootfast.go), whose payments are
	// detail records: their customer's address is a plain field.
	fastCustomerDetail = &fastType{name: "Customer", tag: "Customer/detail", satisfies: customerImplementors,
		ops: map[string]fastOp{"name": opCustName, "email": opCustEmail, "phone": opCustPhone, "city": opCustCity, "address": opCustAddressDetail}}
	fastPaymentDetail = &fastType{name: "Payment", tag: "Payment/detail", satisfies: paymentImplementors,
		ops:        fastPayment.ops,
		objectType: map[fastOp]*fastType{opPayAmount: fastMoney, opPayCustomer: fastCustomerDetail}}
	fastPaymentEdge = &fastType{name: "PaymentEdge", satisfies: paymentEdgeImplementors,
		ops:        map[string]fastOp{"cursor": opEdgeCursor, "node": opEdgeNode},
		objectType: map[fastOp]*fastType{opEdgeNode: fastPayment}}
)

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
	// (customerdata.go: its masked paths are noted where gqlgen has them).
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
// type and selection set (selCache).
var fastPlans selCache[*fastPlan]

// fastCompiled counts the plans compiled (the tests read it).
var fastCompiled atomic.Int64

// planFor returns the plan of sel for an object of type t in the
// operation oc, or nil when gqlgen must marshal it.
func planFor(oc *graphql.OperationContext, t *fastType, sel ast.SelectionSet) *fastPlan {
	if oc == nil || len(sel) == 0 {
		return nil
	}
	p, _ := fastPlans.get(oc.Doc, cmp.Or(t.tag, t.name), nil, sel, func() *fastPlan {
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
				op, ok = opCustAddressGqlgen, true
				p.delegated++
			}
			if !ok {
				return nil // a resolver, another introspection field, or unknown
			}
			ff.op = op
			p.customer = p.customer || op == opPayCustomer
			if sub := t.objectType[op]; sub != nil {
				if ff.sub = compileFast(oc, sub, f.Selections, budget, false); ff.sub == nil {
					// The customer's selection reaches its address: gqlgen
					// marshals that field, the plan the others.
					if op != opPayCustomer || !top || p.delegated == maxDelegated {
						return nil
					}
					if ff.nodes = fieldNodes(oc, sel, t.satisfies, f); ff.nodes == nil {
						return nil
					}
					ff.op, ff.dix = opPayCustomerGqlgen, p.delegated
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
			if f := &p.fields[i]; f.op == opPayCustomerGqlgen {
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
		return &moneyJSON{p, *obj}
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
			if f := &p.fields[i]; f.op == opCustAddressGqlgen {
				m.delegated = ec.fastCustomerAddress(ctx, ec.collected(sel, f.nodes), obj)
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
		return &edgeJSON{p, obj}
	}
	return nil
}

type edgeJSON struct {
	p *fastPlan
	x *model.PaymentEdge
}

func (m *edgeJSON) MarshalGQL(w io.Writer) { w.Write(m.p.appendEdge(spare(w, 640), w, m.x)) }

func (p *fastPlan) appendEdge(b []byte, w io.Writer, x *model.PaymentEdge) []byte {
	b = append(b, '{')
	for i := range p.fields {
		f := &p.fields[i]
		b = append(b, f.key...)
		switch f.op {
		case opTypename:
			b = appendQuoted(b, f.lit)
		case opEdgeCursor:
			b = appendQuoted(b, x.Cursor())
		case opEdgeNode:
			b = f.sub.appendPayment(b, w, x.Node, nil) // a nested plan: nothing delegated
		}
	}
	return append(b, '}')
}

type paymentJSON struct {
	p         *fastPlan
	x         *model.Payment
	delegated [maxDelegated]graphql.Marshaler
}

type moneyJSON struct {
	p *fastPlan
	x model.Money
}

type customerJSON struct {
	p         *fastPlan
	x         *model.Customer
	delegated graphql.Marshaler
}

// The marshalers append into the spare capacity of gqlgen's response
// buffer (a *bytes.Buffer) and write it at once: no buffer of their own
// and no call per value through io.Writer.

func (m *paymentJSON) MarshalGQL(w io.Writer) {
	b := m.p.appendPayment(spare(w, 512), w, m.x, &m.delegated)
	w.Write(b)
}

func (m *moneyJSON) MarshalGQL(w io.Writer) { w.Write(m.p.appendMoney(spare(w, 128), &m.x)) }

func (m *customerJSON) MarshalGQL(w io.Writer) {
	w.Write(m.p.appendCustomer(spare(w, 256), w, m.x, m.delegated))
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

// The appenders below append what gqlgen's FieldSet and the generated
// marshallers write: `{"alias":value,...}`, strings escaped as
// graphql.MarshalString does, scalars as graph/scalar does, null for a
// nil nullable field.

func (p *fastPlan) appendPayment(b []byte, w io.Writer, x *model.Payment, delegated *[maxDelegated]graphql.Marshaler) []byte {
	b = append(b, '{')
	for i := range p.fields {
		f := &p.fields[i]
		b = append(b, f.key...)
		switch f.op {
		case opTypename:
			b = appendQuoted(b, f.lit)
		case opPayID:
			b = appendQuoted(b, x.ID)
		case opPayStatus:
			b = appendEnum(b, string(x.Payment.Status))
		case opPayAmount:
			b = f.sub.appendMoney(b, x.AmountRef())
		case opPayTransactionID:
			b = appendOptString(b, x.TransactionID)
		case opPayPaymentMethod:
			b = appendOptString(b, x.PaymentMethod)
		case opPayCustomer:
			b = f.sub.appendCustomer(b, w, x.Customer(), nil)
		case opPayCustomerGqlgen:
			// gqlgen's marshaler writes to w: what is before it first.
			w.Write(b)
			delegated[f.dix].MarshalGQL(w)
			b = spare(w, 256)
		case opPayCreatedAt:
			b = appendTime(b, x.CreatedAt)
		case opPayUpdatedAt:
			b = appendTime(b, x.UpdatedAt)
		}
	}
	return append(b, '}')
}

func (p *fastPlan) appendMoney(b []byte, x *model.Money) []byte {
	b = append(b, '{')
	for i := range p.fields {
		f := &p.fields[i]
		b = append(b, f.key...)
		switch f.op {
		case opTypename:
			b = appendQuoted(b, f.lit)
		case opMoneyAmount:
			b = append(b, '"')
			b = x.Amount.AppendTaka(b)
			b = append(b, '"')
		case opMoneyPaisa:
			b = appendSafeInt(b, int64(x.Amount))
		case opMoneyCurrency:
			b = appendQuoted(b, x.Currency)
		}
	}
	return append(b, '}')
}

func (p *fastPlan) appendCustomer(b []byte, w io.Writer, x *model.Customer, delegated graphql.Marshaler) []byte {
	b = append(b, '{')
	for i := range p.fields {
		f := &p.fields[i]
		b = append(b, f.key...)
		switch f.op {
		case opTypename:
			b = appendQuoted(b, f.lit)
		case opCustName:
			b = appendOptString(b, x.Name)
		case opCustEmail:
			b = appendOptString(b, x.Email)
		case opCustPhone:
			b = appendOptString(b, x.Phone)
		case opCustCity:
			b = appendOptString(b, x.City)
		case opCustAddressGqlgen:
			w.Write(b)
			delegated.MarshalGQL(w)
			b = spare(w, 128)
		case opCustAddressDetail:
			b = appendOptString(b, x.Address)
		}
	}
	return append(b, '}')
}

func appendOptString(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return appendQuoted(b, *s)
}

// plainASCII: printable ASCII without '"' or '\\', which both gqlgen's
// string and enum marshallers write as they are.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

const hexDigits = "0123456789ABCDEF" // upper case, as gqlgen's encodeHex

// appendQuoted appends s quoted and escaped exactly as gqlgen's
// writeQuotedString (graphql/string.go, v0.17.98) writes it: \t \r \n
// \\ \" by name, other control characters as \u00XX (upper-case hex),
// everything else (invalid UTF-8 too) as it is.
func appendQuoted(b []byte, s string) []byte {
	b = append(b, '"')
	if plainASCII(s) {
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
	if plainASCII(s) && strings.IndexByte(s, 0x7f) < 0 {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	return strconv.AppendQuote(b, s)
}

// appendTime appends a DateTime as scalar.MarshalDateTime writes it.
func appendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = scalar.AppendDateTime(b, t)
	return append(b, '"')
}

// appendSafeInt appends a SafeInt as scalar.MarshalSafeInt writes it
// (null out of range).
func appendSafeInt(b []byte, n int64) []byte {
	if n > scalar.MaxSafeInt || n < -scalar.MaxSafeInt {
		return append(b, "null"...)
	}
	return strconv.AppendInt(b, n, 10)
}
