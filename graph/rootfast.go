package graph

// This file is the fast path of a query made only of payment(id:) root
// fields (one payment, or aliases of it), or of one payments(...) root
// field (fastlist.go), through gqlgen's supported hooks: an operation interceptor that notices such a document, and a
// response interceptor that answers it without gqlgen's executor. gqlgen
// resolves every root field on a goroutine of its own (the goroutine's
// start and its stack growth through gqlgen's frames), with a field
// context, an argument map parsed from the document each time and the
// resolver's closures: ≈ 38 allocations per alias (issue 25,
// docs/perf-log/2026-11-issue-25.md). Here the payments are loaded as the resolver
// loads them (the same id check, scope check, response budget and
// loaders, all loads started before the first is awaited, so that they
// batch as gqlgen's goroutines do), and each is written by the fast
// path's plan of its selection (fast.go), which writes gqlgen's bytes.
//
// Anything else, and any failure on the way (an invalid id, a scope that
// refuses, a payment not found, a REST error), is left to gqlgen's
// executor, which then runs the operation as before: the loaders give it
// the records already loaded (and errors already met) without a second
// REST call. The fields it serves: payment(id:) with a literal or a
// variable id, no directive, no duplicate alias, a selection the fast
// path plans wholly (the customer's address included: a detail record
// holds it, fastPaymentDetail), no customer for an operation read below
// full customer data. It is off when any field or root-field interceptor
// is configured (observe's tracing spans every root field), and with the
// fast path (ServerConfig.noFastPath). TestFastPathMatchesGqlgen compares
// the bytes with gqlgen's.

import (
	"context"
	"strings"
	"sync/atomic"

	"github.com/99designs/gqlgen/graphql"
	"github.com/graph-gophers/dataloader/v7"
	"github.com/vektah/gqlparser/v2/ast"

	"paygraph/graph/model"
	"paygraph/restclient"
)

// rootFast is the extension; r is the server's resolvers.
type rootFast struct{ r *Resolver }

var (
	_ graphql.HandlerExtension     = rootFast{}
	_ graphql.OperationInterceptor = rootFast{}
	_ graphql.ResponseInterceptor  = rootFast{}
)

func (rootFast) ExtensionName() string                   { return "PaygraphRootFastPath" }
func (rootFast) Validate(graphql.ExecutableSchema) error { return nil }

// rootAnswered counts the operations the root fast path answered (the
// tests read it).
var rootAnswered atomic.Int64

// rootPlan is a compiled query of payment(id:) root fields.
type rootPlan struct {
	fields []rootField
	size   atomic.Int32 // the last answer's bytes, to size the next one's buffer
}

type rootField struct {
	key   string // `"alias":`, after a comma but for the first
	id    string // a literal id, or
	idVar string // the variable holding it
	plan  *fastPlan
	// cost is the response budget's plan of the field, as the payment
	// resolver's charge gets it (fieldPlanOf), made once with the plan
	// instead of looked up per field per request.
	cost costPlan
}

// rootPlans keeps the root plans (nil: an operation for gqlgen), per
// document and operation.
var rootPlans selCache[*rootPlan]

// rootState is the operation's: its plan (of payment(id:) fields, or of
// a payments field: list), and whether it has answered.
type rootState struct {
	plan     *rootPlan
	list     *listPlan
	answered bool
	gqlgen   bool // left to gqlgen
	// listRan: the payments resolver ran (fastlist.go), with this result,
	// which the resolver gives gqlgen's executor when the fast path could
	// not write it.
	listRan  bool
	listConn *model.PaymentConnection
	listErr  error
	// resp is the fast path's response (one allocation fewer).
	resp graphql.Response
	// exec is gqlgen's executor of the operation, made when it is first
	// needed (lazyQueries, opstate.go).
	exec graphql.ResponseHandler
}

func (e rootFast) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	return e.intercept(ctx, graphql.GetOperationContext(ctx), nil, next)
}

// intercept is InterceptOperation for operation oc, whose opState st is
// in ctx already, or nil (then it is looked up, or made).
func (e rootFast) intercept(ctx context.Context, oc *graphql.OperationContext, st *opState, next graphql.OperationHandler) graphql.ResponseHandler {
	if oc == nil || oc.Operation == nil || oc.Operation.Operation != ast.Query || oc.Doc == nil || len(oc.Operation.SelectionSet) == 0 {
		return next(ctx)
	}
	f, ok := oc.Operation.SelectionSet[0].(*ast.Field)
	if !ok || f.Name != "payment" && f.Name != "payments" {
		return next(ctx) // at once: most operations
	}
	if f.Name == "payments" {
		if l := listPlanOf(oc); l != nil {
			return next(withRootState(ctx, oc, st, rootState{list: l}))
		}
		return next(ctx)
	}
	p, _ := rootPlans.get(oc.Doc, "Query", nil, oc.Operation.SelectionSet, func() *rootPlan { return compileRoot(oc) })
	if p == nil {
		return next(ctx)
	}
	return next(withRootState(ctx, oc, st, rootState{plan: p}))
}

// withRootState gives the operation its root fast path state, in its
// opState (opstate.go).
func withRootState(ctx context.Context, oc *graphql.OperationContext, st *opState, root rootState) context.Context {
	if st == nil {
		ctx, st = withOpState(ctx, oc)
	}
	st.rootVal = root
	st.root = &st.rootVal
	return ctx
}

func (e rootFast) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	st := rootStateFrom(ctx)
	switch {
	case st == nil || st.gqlgen:
		return next(ctx)
	case st.answered:
		return nil // the end: a query without @defer has one response
	}
	var data []byte
	if st.list != nil {
		data = st.list.answer(ctx, e.r, graphql.GetOperationContext(ctx), st)
	} else {
		data = st.plan.answer(ctx, e.r, graphql.GetOperationContext(ctx))
	}
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

// compileRoot returns the plan of oc's operation, or nil when gqlgen must
// run it.
func compileRoot(oc *graphql.OperationContext) *rootPlan {
	sel := oc.Operation.SelectionSet
	if len(sel) == 0 || len(sel) > maxRootFields {
		return nil
	}
	p := &rootPlan{fields: make([]rootField, 0, len(sel))}
	seen := make(map[string]bool, len(sel))
	for i, s := range sel {
		f, ok := s.(*ast.Field)
		if !ok || f.Name != "payment" || len(f.Directives) > 0 || seen[f.Alias] ||
			f.ObjectDefinition == nil || f.ObjectDefinition.Name != "Query" || len(f.Arguments) != 1 {
			return nil
		}
		seen[f.Alias] = true
		rf := rootField{cost: walkPlans(oc.Doc, graphql.CollectedField{Field: f, Selections: f.SelectionSet}, "Payment", false)[0]}
		switch a := f.Arguments[0]; {
		case a.Name != "id" || a.Value == nil:
			return nil
		case a.Value.Kind == ast.StringValue:
			rf.id = a.Value.Raw
		case a.Value.Kind == ast.Variable:
			rf.idVar = a.Value.Raw
		default:
			return nil
		}
		if rf.plan = planFor(oc, fastPaymentDetail, f.SelectionSet); rf.plan == nil || rf.plan.delegated > 0 {
			return nil
		}
		var key []byte
		if i > 0 {
			key = append(key, ',')
		}
		key = appendQuoted(key, f.Alias)
		rf.key = string(append(key, ':'))
		p.fields = append(p.fields, rf)
	}
	return p
}

// maxRootFields bounds the aliases the root fast path serves (the
// payments' thunks are kept on the stack up to it).
const maxRootFields = 32

// maxSizeHint bounds the buffer a root plan's last answer asks for: an
// answer of unusual length (long strings) does not make every later one
// hold as much.
const maxSizeHint = 64 << 10

// answer loads the payments as the payment resolver does and writes
// them, or returns nil (nothing written, nothing charged) for gqlgen.
func (p *rootPlan) answer(ctx context.Context, r *Resolver, oc *graphql.OperationContext) []byte {
	masked := maskedPathsFrom(ctx) != nil
	budget := budgetFrom(ctx)
	var ids [maxRootFields]string
	// first[i]: the first field of the same id (aliases of one payment):
	// its scope check, its thunk's result and its model are that one's
	// (issue 25: each call of a thunk, a scope check and a model cost an
	// allocation; 20 aliases over 10 ids made 40 more than needed).
	var first [maxRootFields]int8
	var lastVar, lastVal string // aliases of one variable look it up once
	for i := range p.fields {
		f := &p.fields[i]
		if masked && f.plan.customer {
			return nil // its masked paths are noted where gqlgen has them
		}
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
		if first[i] == int8(i) && (checkID("payment id", id, paymentIDPrefix) != nil || r.allowPayment(ctx, id) != nil) ||
			budget.check() != nil {
			return nil
		}
		ids[i] = id
	}
	// Every load started before the first is awaited: they batch. Each
	// field asks for its payment, as its resolver would (the cost
	// receipt counts the asks); an alias of an earlier id awaits nothing.
	loaders := r.loaders(ctx)
	var thunks [maxRootFields]dataloader.Thunk[*restclient.Payment]
	for i := range p.fields {
		thunks[i] = loaders.PaymentThunk(ctx, ids[i])
	}
	var payments [maxRootFields]*model.Payment
	for i := range p.fields {
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
	for i := range p.fields {
		if chargePayment(budget, &p.fields[i].cost, payments[i]) != nil || chargeAddresses(budget, p.fields[i].plan, payments[i]) != nil {
			// The budget is spent: ResponseBudget answers its error,
			// whatever gqlgen writes.
			return nil
		}
	}
	// Sized by the last answer (and an eighth more): the same document
	// answers about the same bytes, and growing the buffer copied it.
	// The first guess, 256 bytes a field, only until there is one: it
	// was twice the 20 aliases' answer (2.6 KB), a 5 KB allocation
	// cleared for nothing.
	n := int(p.size.Load()) * 9 / 8
	if n == 0 {
		n = 256 * len(p.fields)
	}
	b := make([]byte, 0, n)
	b = append(b, '{')
	for i := range p.fields {
		f := &p.fields[i]
		b = append(b, f.key...)
		b = f.plan.appendPayment(b, nil, payments[i], nil)
	}
	b = append(b, '}')
	p.size.Store(int32(min(len(b), maxSizeHint)))
	loaders.fastAnswer = b
	return b
}

// chargePayment charges b what a field of cost plan renders of x, as
// the payment resolver's charged does with its field context.
func chargePayment(b *responseBudget, plan *costPlan, x *model.Payment) error {
	if b == nil {
		return nil
	}
	var s sizes
	paymentSizes(x, &s)
	return b.charge(plan.bytes(&s))
}

// chargeAddresses charges the response budget for each address the plan
// writes, as the address resolver does (chargeString: the alias, the
// key's and the string's bytes).
func chargeAddresses(b *responseBudget, p *fastPlan, x *model.Payment) error {
	if b == nil {
		return nil
	}
	for i := range p.fields {
		if f := &p.fields[i]; f.op == opPaymentCustomer {
			for j := range f.sub.fields {
				if g := &f.sub.fields[j]; g.op == opCustomerAddressDetail {
					alias := len(strings.TrimPrefix(g.key, ",")) - 3 // `"alias":`
					if err := b.charge(keyBytes + stringBytes + strLen(x.Customer().Address) + alias); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// IsFastAnswer reports whether data is the data the root fast path wrote
// for the operation of ctx, unchanged since: compact JSON, nothing
// between its tokens, strings escaped as gqlgen escapes them. It goes by
// the buffer's identity, so data that an interceptor answered instead
// (the response budget's error, say) is never vouched for. The edge then
// only has to make the answer HTML-safe as json.Marshal would, without
// tracking where strings begin and end (gqlhttp/response.go).
func IsFastAnswer(ctx context.Context, data []byte) bool {
	if len(data) == 0 {
		return false
	}
	l, _ := ctx.Value(loadersKey{}).(*Loaders)
	return l != nil && len(l.fastAnswer) == len(data) && &l.fastAnswer[0] == &data[0]
}
