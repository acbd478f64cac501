package graph

// This file is the root fast path of a payments(...) root field
// (rootfast.go's hooks): a query made of one payments field whose
// connection selection (edges, nodes, pageInfo, __typename) the fast
// path plans wholly is answered without gqlgen's executor. gqlgen runs
// the root field on a goroutine of its own, with a field context and an
// argument map parsed from the document each time, then a field set and
// a field context per field of the connection and of its page info, and
// a field context per item of each list (≈ 40 allocations and a
// goroutine per page, docs/perf-log/2026-11-issue-25.md). Here the arguments are
// coerced by gqlgen's own generated code (once per document when they
// are literals), the payments resolver runs as it is (paymentsOf: its
// argument checks, scope, limits, response budget, cursor checks, the
// list join), and the page is written by the fast path's plans, which
// write gqlgen's bytes (fast.go, fast_gen.go); the items' addresses,
// which the list join filled, are plain fields there
// (fastPaymentEdgeDetail, fastPaymentDetail), charged to the response
// budget as the address resolver charges them.
//
// Anything the plans cannot write is gqlgen's, and the resolver never
// runs twice: the resolver's error (an invalid first or cursor, a scope
// that refuses, a REST error, a spent budget), an item whose address the
// join could not fill (its detail failed: the address resolver answers
// its error at its path), a panic. The resolver's result (or error) is
// kept in the operation's rootState, where the payments resolver finds
// it when gqlgen's executor then runs the field (query.go), so gqlgen
// writes the same answer, errors and partial results as without the fast
// path, from one REST call. Arguments gqlgen's code refuses, an
// operation read below full customer data whose selection reaches the
// customer, and one whose level withholds the address are gqlgen's before
// anything runs. TestListFastPath compares the bytes with gqlgen's.

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"paygraph/graph/model"
)

// listPlan is a compiled payments(...) root field.
type listPlan struct {
	key   string // `{"alias":`
	field graphql.CollectedField
	// args: the arguments as gqlgen coerces them, when the document
	// holds them all (nil: from the variables, per operation).
	args   map[string]any
	fields []listField
	// customer: an item plan writes a customer; addresses: an item plan
	// writes its address (the list join's).
	customer, addresses bool
	lists               int          // the edges and nodes fields
	perEdge             atomic.Int32 // the last answer's bytes per edge
}

type listOp uint8

const (
	listTypename listOp = iota
	listEdges
	listNodes
	listPageInfo
	pageTypename
	pageHasNext
	pageHasPrevious
	pageStartCursor
	pageEndCursor
)

// listField is a field of the connection (or of its page info: page).
type listField struct {
	key  string // `"alias":`, after a comma but for the first
	op   listOp
	plan *fastPlan   // edges: a PaymentEdge/detail plan; nodes: a Payment/detail plan
	page []listField // pageInfo's fields
	// addressAliases: the length of the alias of each address an item
	// of plan writes (the response budget charges it).
	addressAliases []int
}

// listPlans keeps the list plans (nil: an operation for gqlgen), per
// document and operation.
var listPlans selCache[*listPlan]

// listPlanOf returns the plan of oc's operation, a payments root field,
// or nil.
func listPlanOf(oc *graphql.OperationContext) *listPlan {
	p, _ := listPlans.get(oc.Doc, "Query/payments", nil, oc.Operation.SelectionSet, func() *listPlan { return compileList(oc) })
	return p
}

// compileList returns the plan of oc's operation, or nil when gqlgen must
// run it.
func compileList(oc *graphql.OperationContext) *listPlan {
	sel := oc.Operation.SelectionSet
	if len(sel) != 1 {
		return nil
	}
	f, ok := sel[0].(*ast.Field)
	if !ok || f.Name != "payments" || len(f.Directives) > 0 || f.ObjectDefinition == nil || f.ObjectDefinition.Name != "Query" ||
		len(f.SelectionSet) == 0 || !plainDirectives(oc, f.SelectionSet, 0) {
		return nil
	}
	p := &listPlan{field: graphql.CollectedField{Field: f, Selections: f.SelectionSet}}
	p.key = string(append(appendQuoted([]byte{'{'}, f.Alias), ':'))
	if !hasVariable(f.Arguments) {
		args, err := newArgsContext(oc).field_Query_payments_args(context.Background(), f.ArgumentMap(nil))
		if err != nil {
			return nil
		}
		p.args = args
	}
	for i, cf := range graphql.CollectFields(oc, f.SelectionSet, paymentConnectionImplementors) {
		if len(cf.Deferrables) > 0 {
			return nil
		}
		lf := listField{key: fieldKey(i, cf.Alias)}
		switch cf.Name {
		case "__typename":
			lf.op = listTypename
		case "edges", "nodes":
			t := fastPaymentEdgeDetail
			lf.op = listEdges
			if cf.Name == "nodes" {
				t, lf.op = fastPaymentDetail, listNodes
			}
			if lf.plan = planFor(oc, t, cf.Selections); lf.plan == nil || lf.plan.delegated > 0 {
				return nil
			}
			lf.addressAliases = addressAliases(lf.plan, nil)
			p.lists++
			p.customer = p.customer || lf.plan.customer
			p.addresses = p.addresses || len(lf.addressAliases) > 0
		case "pageInfo":
			lf.op = listPageInfo
			for j, pf := range graphql.CollectFields(oc, cf.Selections, pageInfoImplementors) {
				op, ok := pageOps[pf.Name]
				if !ok || len(pf.Deferrables) > 0 {
					return nil
				}
				lf.page = append(lf.page, listField{key: fieldKey(j, pf.Alias), op: op})
			}
			if len(lf.page) == 0 {
				return nil
			}
		default:
			return nil
		}
		p.fields = append(p.fields, lf)
	}
	if len(p.fields) == 0 {
		return nil
	}
	return p
}

var pageOps = map[string]listOp{
	"__typename": pageTypename, "hasNextPage": pageHasNext, "hasPreviousPage": pageHasPrevious,
	"startCursor": pageStartCursor, "endCursor": pageEndCursor,
}

// fieldKey is `"alias":`, after a comma but for the first field.
func fieldKey(i int, alias string) string {
	var key []byte
	if i > 0 {
		key = append(key, ',')
	}
	return string(append(appendQuoted(key, alias), ':'))
}

// hasVariable reports whether an argument's value holds a variable.
func hasVariable(args ast.ArgumentList) bool {
	var has func(v *ast.Value) bool
	has = func(v *ast.Value) bool {
		if v == nil {
			return false
		}
		if v.Kind == ast.Variable {
			return true
		}
		for _, c := range v.Children {
			if has(c.Value) {
				return true
			}
		}
		return false
	}
	for _, a := range args {
		if has(a.Value) {
			return true
		}
	}
	return false
}

// newArgsContext is an executionContext for gqlgen's generated argument
// coercion (which reads nothing else of it).
func newArgsContext(oc *graphql.OperationContext) *executionContext {
	return &executionContext{ExecutionContextState: &graphql.ExecutionContextState[ResolverRoot, DirectiveRoot, ComplexityRoot]{OperationContext: oc}}
}

// addressAliases appends the alias length of each address an object of
// plan p (an edge, a payment or a customer) writes.
func addressAliases(p *fastPlan, to []int) []int {
	for i := range p.fields {
		f := &p.fields[i]
		switch {
		case f.op == opCustomerAddressDetail:
			to = append(to, len(strings.TrimPrefix(f.key, ","))-3) // `"alias":`
		case f.sub != nil:
			to = addressAliases(f.sub, to)
		}
	}
	return to
}

// answer runs the payments resolver and writes its page, or returns nil
// for gqlgen (which then finds the resolver's result in st, if it ran).
func (p *listPlan) answer(ctx context.Context, r *Resolver, oc *graphql.OperationContext, st *rootState) []byte {
	if p.customer && maskedPathsFrom(ctx) != nil || p.addresses && withholdsAddress(customerDataOf(ctx)) {
		return nil // gqlgen notes what the level hid, at its paths
	}
	args := p.args
	if args == nil {
		var err error
		if args, err = newArgsContext(oc).field_Query_payments_args(ctx, p.field.ArgumentMap(oc.Variables)); err != nil {
			return nil
		}
	}
	first, _ := args["first"].(*int)
	after, _ := args["after"].(*string)
	status, _ := args["status"].(*model.PaymentStatus)
	conn, err, ok := p.resolve(ctx, r, first, after, status)
	if !ok {
		return nil // a panic: gqlgen runs the field again and answers it
	}
	st.listRan, st.listConn, st.listErr = true, conn, err
	if err != nil || conn == nil || conn.PageInfo == nil || len(conn.Nodes) != len(conn.Edges) {
		return nil
	}
	// For gqlgen, as the payments resolver gives it.
	gqlgen := func() []byte { conn.SetCursors(); return nil }
	for i, e := range conn.Edges {
		if e == nil || e.Node == nil || e.Node.Payment == nil || e.Cursors == nil || conn.Nodes[i] != e.Node ||
			p.addresses && e.Node.Customer().AddressOf != "" {
			return gqlgen() // an address the join could not fill: its resolver's error
		}
	}
	if p.addresses {
		if b := budgetFrom(ctx); b != nil {
			for i := range p.fields {
				for _, alias := range p.fields[i].addressAliases {
					for _, e := range conn.Edges {
						if b.charge(keyBytes+stringBytes+strLen(e.Node.Customer().Address)+alias) != nil {
							return gqlgen() // spent: ResponseBudget answers its error
						}
					}
				}
			}
		}
	}
	return p.write(conn, r.loaders(ctx))
}

// resolve is the payments resolver; ok is false when it panicked.
func (p *listPlan) resolve(ctx context.Context, r *Resolver, first *int, after *string, status *model.PaymentStatus) (conn *model.PaymentConnection, err error, ok bool) {
	defer func() {
		if recover() != nil {
			conn, err, ok = nil, nil, false
		}
	}()
	conn, err = r.paymentsOf(ctx, p.field, first, after, status)
	return conn, err, true
}

// write writes the data of conn as gqlgen writes it for the plan.
func (p *listPlan) write(conn *model.PaymentConnection, l *Loaders) []byte {
	// The answer's room: what this plan's last answer took per edge (one
	// buffer, near its size: the answer lives until it is written).
	perEdge := int(p.perEdge.Load())
	if perEdge == 0 {
		perEdge = 256 * p.lists
	}
	b := make([]byte, 0, 256+len(conn.Edges)*perEdge)
	b = append(b, p.key...)
	b = append(b, '{')
	for i := range p.fields {
		f := &p.fields[i]
		b = append(b, f.key...)
		switch f.op {
		case listTypename:
			b = appendQuoted(b, "PaymentConnection")
		case listEdges:
			b = append(b, '[')
			for j, e := range conn.Edges {
				if j > 0 {
					b = append(b, ',')
				}
				b = f.plan.appendPaymentEdge(b, nil, e, nil)
			}
			b = append(b, ']')
		case listNodes:
			b = append(b, '[')
			for j, x := range conn.Nodes {
				if j > 0 {
					b = append(b, ',')
				}
				b = f.plan.appendPayment(b, nil, x, nil)
			}
			b = append(b, ']')
		case listPageInfo:
			b = appendPageInfo(b, f.page, conn.PageInfo, conn.Edges)
		}
	}
	b = append(b, '}', '}')
	if n := len(conn.Edges); n > 0 {
		p.perEdge.Store(int32(min(len(b)/n+16, 1<<16)))
	}
	l.fastAnswer = b
	return b
}

func appendPageInfo(b []byte, fields []listField, x *model.PageInfo, edges []*model.PaymentEdge) []byte {
	b = append(b, '{')
	for i := range fields {
		f := &fields[i]
		b = append(b, f.key...)
		switch f.op {
		case pageTypename:
			b = appendQuoted(b, "PageInfo")
		case pageHasNext:
			b = strconv.AppendBool(b, x.HasNextPage)
		case pageHasPrevious:
			b = strconv.AppendBool(b, x.HasPreviousPage)
		case pageStartCursor, pageEndCursor:
			// The resolver leaves them to SetCursors (an HMAC each): the
			// first and the last edge's, null without edges.
			if len(edges) == 0 {
				b = append(b, "null"...)
			} else if f.op == pageStartCursor {
				b = appendQuoted(b, edges[0].Cursor())
			} else {
				b = appendQuoted(b, edges[len(edges)-1].Cursor())
			}
		}
	}
	return append(b, '}')
}
