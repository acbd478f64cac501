package graph

// The response tail: graph's own operation and response interceptors,
// run as one gqlgen extension (graphTail): the APQ registration's commit,
// the extensions that only prepare the operation's context and then look
// at the response next returned (the cost receipt, the response budget,
// the error cap, a subscription's live events, the customer-data note),
// and the root fast path. gqlgen makes a closure per interceptor per
// operation to chain them (processExtensions); these did nothing with the
// chain but call next, so one interceptor of each kind does their work in
// the same order, with the same contexts, at one closure each instead of
// five and six (issue 25: 9 allocations a request).

import (
	"context"
	"paygraph/graph/apq"
	"paygraph/graph/budget"
	"paygraph/graph/customerdata"
	"paygraph/graph/live"

	"github.com/99designs/gqlgen/graphql"

	"paygraph/graph/admission"
	"paygraph/graph/receipt"
)

// responseTail does what registering receipt.Extension, the response
// budget, admission.ErrorCap, the live events and the customer-data note
// in that order did (the first outermost): graphTail.InterceptOperation
// does their operation interceptors' work, finish their response
// interceptors'.
type responseTail struct {
	cost   receipt.Extension
	budget budget.Limit
}

// finish finishes the response as the response interceptors did,
// innermost first. Each of them called next with the context it was
// given, so each finish sees the same ctx.
func (t responseTail) finish(ctx context.Context, resp *graphql.Response) *graphql.Response {
	resp = maskedPathsFrom(ctx).Finish(resp)
	resp = liveEventsFrom(ctx).Finish(ctx, resp, ErrorPresenter)
	resp = admission.ErrorCap{}.Finish(resp)
	resp = t.budget.Finish(budgetFrom(ctx), resp)
	return t.cost.Finish(ctx, resp)
}

// graphTail is, in one extension, graph's operation and response
// interceptors: what registering apq.Commit, responseTail and rootFast in
// that order (the first outermost) did, rootFast when root is set. gqlgen
// makes a closure per interceptor of each kind per operation
// (processExtensions): one extension instead of three saves three
// (issue 25). apq.Commit sat outside the extensions of
// ServerConfig.Extensions (metrics, tracing): it only stores an APQ
// registration, which is now done inside them; responseTail and rootFast
// were the innermost already, in that order. TestResponseTailMatchesChain
// compares it with the extensions registered one by one.
type graphTail struct {
	commit apq.Commit
	tail   responseTail
	root   *rootFast // nil: the root fast path is off
}

var (
	_ graphql.HandlerExtension     = graphTail{}
	_ graphql.OperationInterceptor = graphTail{}
	_ graphql.ResponseInterceptor  = graphTail{}
)

func (graphTail) ExtensionName() string                   { return "GraphTail" }
func (graphTail) Validate(graphql.ExecutableSchema) error { return nil }

func (t graphTail) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	t.commit.Commit(ctx)
	oc := graphql.GetOperationContext(ctx)
	// The operation's state, made here without looking for one (the
	// look-up of a key that is not there walks the whole context), with
	// what its context says of its caller (callerFacts), read once.
	st := &opState{oc: oc}
	ctx = context.WithValue(ctx, opStateKey{}, st)
	st.budget = t.tail.budget.Start(&st.budgetVal, oc)
	c := callerFacts{known: true}
	c.scope, c.hasScope = scopeIn(ctx)
	c.level = customerDataIn(ctx, c.scope, c.hasScope)
	// Then the operation interceptors' work, outermost first (the cost
	// receipt and the error cap have none): a subscription's live events,
	// the customer data's masked paths.
	ctx, c.live = live.WithEvents(ctx, oc)
	ctx, c.masked = customerdata.WithPaths(ctx, c.level)
	st.caller = c
	if t.root != nil {
		return t.root.intercept(ctx, oc, st, next)
	}
	return next(ctx)
}

func (t graphTail) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	var resp *graphql.Response
	if t.root != nil {
		resp = t.root.InterceptResponse(ctx, next)
	} else {
		resp = next(ctx)
	}
	return t.tail.finish(ctx, resp)
}

// tailStep is one step of responseTail registered as an extension of its
// own (ServerConfig.chainedTail, for TestResponseTailMatchesChain).
type tailStep struct {
	name    string
	prepare func(context.Context) context.Context
	finish  func(context.Context, *graphql.Response) *graphql.Response
}

func (s tailStep) ExtensionName() string                 { return s.name }
func (tailStep) Validate(graphql.ExecutableSchema) error { return nil }

func (s tailStep) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	return next(s.prepare(ctx))
}

func (s tailStep) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	return s.finish(ctx, next(ctx))
}

// budgetStep is the response budget's tailStep.
func budgetStep(l budget.Limit) tailStep {
	return tailStep{"ResponseBudget", func(ctx context.Context) context.Context {
		oc := graphql.GetOperationContext(ctx)
		if !l.Applies(oc) {
			return ctx
		}
		ctx, st := withOpState(ctx, oc)
		st.budget = l.Start(&st.budgetVal, oc)
		return ctx
	}, func(ctx context.Context, resp *graphql.Response) *graphql.Response {
		return l.Finish(budgetFrom(ctx), resp)
	}}
}

// customerDataStep is the customer-data note's tailStep.
var customerDataStep = tailStep{"CustomerData", func(ctx context.Context) context.Context {
	ctx, _ = customerdata.WithPaths(ctx, customerDataOf(ctx))
	return ctx
}, func(ctx context.Context, resp *graphql.Response) *graphql.Response {
	return maskedPathsFrom(ctx).Finish(resp)
}}

// liveStep is the live events' tailStep.
var liveStep = tailStep{"LiveEvents", func(ctx context.Context) context.Context {
	ctx, _ = live.WithEvents(ctx, graphql.GetOperationContext(ctx))
	return ctx
}, func(ctx context.Context, resp *graphql.Response) *graphql.Response {
	return liveEventsFrom(ctx).Finish(ctx, resp, ErrorPresenter)
}}
