package graph

// The root fast path: a query of payment(id:) root fields only, or of one
// payments(...) field, is compiled once per document into a rootPlan and
// answered from gqlgen's interceptors without its executor (a goroutine, a
// field context and an argument map per root field and list item). Records
// are loaded as the resolvers load them and written by fast.go's plans.
//
// payment(id:) takes a literal or variable id, no directive, no duplicate
// alias and a selection the plans cover; all loads start before the first
// is awaited, so they batch. payments(...) runs the resolver as it is
// (paymentsOf) and keeps its result in rootState, which gqlgen's payments
// resolver reuses when the plans cannot write it. Any failure (an invalid
// id, a refused scope, a REST error, a spent budget) leaves the operation
// to gqlgen, whose loaders already hold what was loaded. So do a
// customer-data level hiding part of the selection, any field or root-field
// interceptor, and ServerConfig.noFastPath. TestFastPathMatchesGqlgen and
// TestListFastPath compare the bytes with gqlgen's.

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/99designs/gqlgen/graphql"
	"github.com/graph-gophers/dataloader/v7"
	"github.com/vektah/gqlparser/v2/ast"

	"paygraph/graph/admission"
	"paygraph/graph/budget"
	"paygraph/graph/customerdata"
	"paygraph/graph/loaders"
	"paygraph/graph/model"
	"paygraph/graph/selcache"
	"paygraph/restclient"
)

// rootFast is graphTail's innermost part; r is the server's resolvers.
type rootFast struct{ r *Resolver }

// rootAnswered counts the operations the root fast path answered, for tests.
var rootAnswered atomic.Int64

// rootPlan is a compiled query: payment(id:) root fields, or one payments(...).
type rootPlan struct {
	payments []paymentRoot
	list     *listRoot
	customer bool         // a field's plan writes a customer
	perUnit  atomic.Int32 // the last answer's bytes per payment field or list edge
}

// paymentRoot is a payment(id:) root field.
type paymentRoot struct {
	key            string // `"alias":`, after a comma but for the first
	id             string // a literal id, or
	idVar          string // the variable holding it
	plan           *fastPlan
	addressAliases []int       // the alias length of each address plan writes (charged)
	cost           budget.Plan // the response budget's plan of the field, made once
}

// listRoot is a payments(...) root field.
type listRoot struct {
	key       string // `{"alias":`
	field     graphql.CollectedField
	args      map[string]any // coerced once when the document holds them all, else nil
	fields    []listField
	addresses bool // an item plan writes its address (the list join's)
	lists     int  // the edges and nodes fields
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
	key            string // `"alias":`, after a comma but for the first
	op             listOp
	plan           *fastPlan   // edges: a PaymentEdge/detail plan; nodes: a Payment/detail plan
	page           []listField // pageInfo's fields
	addressAliases []int       // as paymentRoot's, per item of plan
}

// rootPlans keeps the root plans (nil: for gqlgen) per document and operation.
var rootPlans selcache.Cache[*rootPlan]

// rootState is the operation's: its plan, and whether it has answered.
type rootState struct {
	plan     *rootPlan
	answered bool
	gqlgen   bool // left to gqlgen
	// listRan: the payments resolver ran (answerList) with this result,
	// which gqlgen's executor takes when the fast path could not write it.
	listRan  bool
	listConn *model.PaymentConnection
	listErr  error
	resp     graphql.Response        // the fast path's response, not an allocation of its own
	exec     graphql.ResponseHandler // gqlgen's executor, made when first needed (lazyQueries)
}

// intercept is the operation interceptor for oc, whose opState st is in ctx.
func (e rootFast) intercept(ctx context.Context, oc *graphql.OperationContext, st *opState, next graphql.OperationHandler) graphql.ResponseHandler {
	if oc == nil || oc.Operation == nil || oc.Operation.Operation != ast.Query || oc.Doc == nil || len(oc.Operation.SelectionSet) == 0 {
		return next(ctx)
	}
	f, ok := oc.Operation.SelectionSet[0].(*ast.Field)
	if !ok || f.Name != "payment" && f.Name != "payments" {
		return next(ctx) // at once: most operations
	}
	p, _ := rootPlans.Get(oc.Doc, "Query", nil, oc.Operation.SelectionSet, func() *rootPlan { return compileRoot(oc) })
	if p == nil {
		return next(ctx)
	}
	st.rootVal = rootState{plan: p}
	st.root = &st.rootVal
	return next(ctx)
}

func (e rootFast) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	st := rootStateFrom(ctx)
	switch {
	case st == nil || st.gqlgen:
		return next(ctx)
	case st.answered:
		return nil // the end: a query without @defer has one response
	}
	data := st.plan.answer(ctx, e.r, graphql.GetOperationContext(ctx), st)
	if data == nil {
		st.gqlgen = true
		return next(ctx)
	}
	st.answered = true
	rootAnswered.Add(1)
	// What the executor adds to its response (DispatchOperation).
	st.resp = graphql.Response{Data: data, Errors: graphql.GetErrors(ctx), Extensions: graphql.GetExtensions(ctx)}
	return &st.resp
}

// compileRoot returns the plan of oc's operation, or nil for gqlgen.
func compileRoot(oc *graphql.OperationContext) *rootPlan {
	p := &rootPlan{}
	if f, ok := oc.Operation.SelectionSet[0].(*ast.Field); ok && f.Name == "payments" {
		if !p.compileList(oc, f) {
			return nil
		}
	} else if !p.compilePayments(oc) {
		return nil
	}
	return p
}

// compilePayments plans oc's operation of payment(id:) root fields.
func (p *rootPlan) compilePayments(oc *graphql.OperationContext) bool {
	sel := oc.Operation.SelectionSet
	if len(sel) > maxRootFields {
		return false
	}
	p.payments = make([]paymentRoot, 0, len(sel))
	seen := make(map[string]bool, len(sel))
	for i, s := range sel {
		f, ok := s.(*ast.Field)
		if !ok || f.Name != "payment" || len(f.Directives) > 0 || seen[f.Alias] ||
			f.ObjectDefinition == nil || f.ObjectDefinition.Name != "Query" || len(f.Arguments) != 1 {
			return false
		}
		seen[f.Alias] = true
		pf := paymentRoot{key: fieldKey(i, f.Alias), cost: budget.WalkPlans(oc.Doc, graphql.CollectedField{Field: f, Selections: f.SelectionSet}, "Payment", false)[0]}
		switch a := f.Arguments[0]; {
		case a.Name != "id" || a.Value == nil:
			return false
		case a.Value.Kind == ast.StringValue:
			pf.id = a.Value.Raw
		case a.Value.Kind == ast.Variable:
			pf.idVar = a.Value.Raw
		default:
			return false
		}
		if pf.plan = planFor(oc, fastPaymentDetail, f.SelectionSet); pf.plan == nil || pf.plan.delegated > 0 {
			return false
		}
		pf.addressAliases = addressAliases(pf.plan, nil)
		p.customer = p.customer || pf.plan.customer
		p.payments = append(p.payments, pf)
	}
	return true
}

// compileList plans oc's operation of one payments(...) root field f.
func (p *rootPlan) compileList(oc *graphql.OperationContext, f *ast.Field) bool {
	if len(oc.Operation.SelectionSet) != 1 || len(f.Directives) > 0 || f.ObjectDefinition == nil || f.ObjectDefinition.Name != "Query" ||
		len(f.SelectionSet) == 0 || !plainDirectives(oc, f.SelectionSet, 0) {
		return false
	}
	l := &listRoot{key: "{" + fieldKey(0, f.Alias), field: graphql.CollectedField{Field: f, Selections: f.SelectionSet}}
	if !slices.ContainsFunc(f.Arguments, func(a *ast.Argument) bool { return holdsVariable(a.Value) }) {
		args, err := argsContext(oc).field_Query_payments_args(context.Background(), f.ArgumentMap(nil))
		if err != nil {
			return false
		}
		l.args = args
	}
	for i, cf := range graphql.CollectFields(oc, f.SelectionSet, paymentConnectionImplementors) {
		if len(cf.Deferrables) > 0 {
			return false
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
				return false
			}
			lf.addressAliases = addressAliases(lf.plan, nil)
			l.lists++
			p.customer = p.customer || lf.plan.customer
			l.addresses = l.addresses || len(lf.addressAliases) > 0
		case "pageInfo":
			lf.op = listPageInfo
			for j, pf := range graphql.CollectFields(oc, cf.Selections, pageInfoImplementors) {
				op, ok := pageOps[pf.Name]
				if !ok || len(pf.Deferrables) > 0 {
					return false
				}
				lf.page = append(lf.page, listField{key: fieldKey(j, pf.Alias), op: op})
			}
			if len(lf.page) == 0 {
				return false
			}
		default:
			return false
		}
		l.fields = append(l.fields, lf)
	}
	if len(l.fields) == 0 {
		return false
	}
	p.list = l
	return true
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

// holdsVariable reports whether v is or holds a variable.
func holdsVariable(v *ast.Value) bool {
	return v != nil && (v.Kind == ast.Variable ||
		slices.ContainsFunc(v.Children, func(c *ast.ChildValue) bool { return holdsVariable(c.Value) }))
}

// argsContext is an executionContext for argument coercion and collected.
func argsContext(oc *graphql.OperationContext) *executionContext {
	return &executionContext{ExecutionContextState: &graphql.ExecutionContextState[ResolverRoot, DirectiveRoot, ComplexityRoot]{OperationContext: oc}}
}

// addressAliases appends the alias length of each address plan p writes.
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

// maxRootFields bounds the aliases served, whose thunks are kept on the stack.
const maxRootFields = 32

// maxSizeHint bounds the bytes per unit a plan's last answer asks of the
// next, so that one long answer does not inflate every later one.
const maxSizeHint = 16 << 10

// answer writes the operation's data, or returns nil for gqlgen.
func (p *rootPlan) answer(ctx context.Context, r *Resolver, oc *graphql.OperationContext, st *rootState) []byte {
	if p.customer && maskedPathsFrom(ctx) != nil {
		return nil // gqlgen notes what the level hid, at its paths
	}
	if p.list != nil {
		return p.answerList(ctx, r, oc, st)
	}
	return p.answerPayments(ctx, r, oc)
}

// buffer is an empty buffer for an answer of units payment fields or list
// edges, sized by the last answer (growing copies), at first 256 a payment.
func (p *rootPlan) buffer(units int) []byte {
	per := int(p.perUnit.Load())
	if per == 0 {
		per = 256
		if p.list != nil {
			per *= p.list.lists
		}
	}
	return make([]byte, 0, 64+units*per)
}

// answered notes b as the operation's answer (IsFastAnswer) and its size.
func (p *rootPlan) answered(l *loaders.Loaders, b []byte, units int) []byte {
	if units > 0 {
		p.perUnit.Store(int32(min(len(b)/units+16, maxSizeHint)))
	}
	l.FastAnswer = b
	return b
}

// answerPayments loads the payments as the payment resolver does and writes them.
func (p *rootPlan) answerPayments(ctx context.Context, r *Resolver, oc *graphql.OperationContext) []byte {
	budget := budgetFrom(ctx)
	var ids [maxRootFields]string
	// first[i]: the first field of the same id, whose scope check, thunk
	// and model the aliases of one payment share.
	var first [maxRootFields]int8
	var lastVar, lastVal string // aliases of one variable look it up once
	for i := range p.payments {
		f := &p.payments[i]
		id := f.id
		if f.idVar != "" {
			if f.idVar != lastVar {
				s, ok := oc.Variables[f.idVar].(string)
				if !ok {
					return nil
				}
				lastVar, lastVal = f.idVar, s
			}
			id = lastVal
		}
		first[i] = int8(i)
		for j := range i {
			if ids[j] == id {
				first[i] = int8(j)
				break
			}
		}
		if first[i] == int8(i) && (checkID("payment id", id, admission.PaymentIDPrefix) != nil || r.allowPayment(ctx, id) != nil) ||
			budget.Check() != nil {
			return nil
		}
		ids[i] = id
	}
	// Every load starts before the first is awaited, so they batch; each
	// field asks, as its resolver would (the cost receipt counts asks).
	ld := loaders.For(ctx)
	var thunks [maxRootFields]dataloader.Thunk[*restclient.Payment]
	for i := range p.payments {
		thunks[i] = ld.PaymentThunk(ctx, ids[i])
	}
	var payments [maxRootFields]*model.Payment
	for i := range p.payments {
		if j := first[i]; int(j) != i {
			payments[i] = payments[j]
			continue
		}
		x, err := thunks[i]()
		if err != nil || x == nil {
			return nil
		}
		payments[i] = model.NewPayment(x)
	}
	for i := range p.payments {
		if budget.ChargePayment(&p.payments[i].cost, payments[i]) != nil || budget.ChargeAddresses(payments[i].Customer().Address, p.payments[i].addressAliases...) != nil {
			return nil // spent: package budget answers its error, whatever gqlgen writes
		}
	}
	b := p.buffer(len(p.payments))
	b = append(b, '{')
	for i := range p.payments {
		f := &p.payments[i]
		b = append(b, f.key...)
		b = f.plan.appendPayment(b, nil, payments[i], nil)
	}
	b = append(b, '}')
	return p.answered(ld, b, len(p.payments))
}

// answerList runs the payments resolver and writes its page, or nil for gqlgen.
func (p *rootPlan) answerList(ctx context.Context, r *Resolver, oc *graphql.OperationContext, st *rootState) []byte {
	l := p.list
	if l.addresses && customerdata.WithholdsAddress(customerDataOf(ctx)) {
		return nil // gqlgen notes what the level hid, at its paths
	}
	args := l.args
	if args == nil {
		var err error
		if args, err = argsContext(oc).field_Query_payments_args(ctx, l.field.ArgumentMap(oc.Variables)); err != nil {
			return nil
		}
	}
	first, _ := args["first"].(*int)
	after, _ := args["after"].(*string)
	status, _ := args["status"].(*model.PaymentStatus)
	conn, err, ok := l.resolve(ctx, r, first, after, status)
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
			l.addresses && e.Node.Customer().AddressOf != "" {
			return gqlgen() // an address the join could not fill: its resolver's error
		}
	}
	if l.addresses {
		if b := budgetFrom(ctx); b != nil {
			for i := range l.fields {
				for _, alias := range l.fields[i].addressAliases {
					for _, e := range conn.Edges {
						if b.ChargeAddresses(e.Node.Customer().Address, alias) != nil {
							return gqlgen() // spent: package budget answers its error
						}
					}
				}
			}
		}
	}
	b := l.write(p.buffer(len(conn.Edges)), conn)
	return p.answered(loaders.For(ctx), b, len(conn.Edges))
}

// resolve is the payments resolver; ok is false when it panicked.
func (p *listRoot) resolve(ctx context.Context, r *Resolver, first *int, after *string, status *model.PaymentStatus) (conn *model.PaymentConnection, err error, ok bool) {
	defer func() {
		if recover() != nil {
			conn, err, ok = nil, nil, false
		}
	}()
	conn, err = r.paymentsOf(ctx, p.field, first, after, status)
	return conn, err, true
}

// write appends the data of conn as gqlgen writes it for the field.
func (p *listRoot) write(b []byte, conn *model.PaymentConnection) []byte {
	b = append(b, p.key...)
	b = append(b, '{')
	for i := range p.fields {
		f := &p.fields[i]
		b = append(b, f.key...)
		switch f.op {
		case listTypename:
			b = appendQuoted(b, "PaymentConnection")
		case listEdges, listNodes:
			b = append(b, '[')
			for j, e := range conn.Edges {
				if j > 0 {
					b = append(b, ',')
				}
				if f.op == listEdges {
					b = f.plan.appendPaymentEdge(b, nil, e, nil)
				} else {
					b = f.plan.appendPayment(b, nil, conn.Nodes[j], nil)
				}
			}
			b = append(b, ']')
		case listPageInfo:
			b = appendPageInfo(b, f.page, conn.PageInfo, conn.Edges)
		}
	}
	return append(b, '}', '}')
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
			// Made here, not by SetCursors (an HMAC each): the first and
			// the last edge's, null without edges.
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

// IsFastAnswer reports whether data is what the root fast path wrote for
// ctx's operation: compact JSON with gqlgen's escaping, which the edge only
// makes HTML-safe (gqlhttp/response.go). It goes by the buffer's identity,
// so data an interceptor answered instead is never vouched for.
func IsFastAnswer(ctx context.Context, data []byte) bool {
	if len(data) == 0 {
		return false
	}
	l := loaders.From(ctx)
	if l == nil {
		return false
	}
	a := l.FastAnswer
	return len(a) == len(data) && &a[0] == &data[0]
}
