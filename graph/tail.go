package graph

// The response tail: graph's own interceptors, which only prepare the
// context and look at next's response, run as one extension (graphTail) in
// the same order, where gqlgen would make a closure per interceptor.

import (
	"context"

	"github.com/99designs/gqlgen/graphql"

	"paygraph/graph/admission"
	"paygraph/graph/apq"
	"paygraph/graph/budget"
	"paygraph/graph/customerdata"
	"paygraph/graph/live"
	"paygraph/graph/receipt"
)

// responseTail is receipt.Extension, the response budget, admission.ErrorCap,
// the live events and the customer-data note, the first outermost.
type responseTail struct {
	cost   receipt.Extension
	budget budget.Limit
}

// finish does their response interceptors' work, innermost first.
func (t responseTail) finish(ctx context.Context, resp *graphql.Response) *graphql.Response {
	resp = maskedPathsFrom(ctx).Finish(resp)
	resp = liveEventsFrom(ctx).Finish(ctx, resp, ErrorPresenter)
	resp = admission.ErrorCap{}.Finish(resp)
	resp = t.budget.Finish(budgetFrom(ctx), resp)
	return t.cost.Finish(ctx, resp)
}

// graphTail is apq.Commit, responseTail and rootFast (when root is set)
// in one extension, the first outermost. TestResponseTailMatchesChain
// compares it with them registered one by one (chainTail, export_test.go).
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
	// The operation's state, made without a look-up (a missing key walks
	// the whole context), with its caller's facts read once.
	st := &opState{oc: oc}
	ctx = context.WithValue(ctx, opStateKey{}, st)
	st.budget = t.tail.budget.Start(&st.budgetVal, oc)
	c := callerFacts{known: true}
	c.scope, c.hasScope = scopeIn(ctx)
	c.level = customerDataIn(ctx, c.scope, c.hasScope)
	// The operation interceptors' work, outermost first.
	ctx, c.live = live.WithEvents(ctx, oc)
	ctx, c.masked = customerdata.WithPaths(ctx, c.level)
	st.caller = c
	if t.root != nil {
		return t.root.intercept(ctx, oc, st, next)
	}
	return next(ctx)
}

func (t graphTail) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	if t.root != nil {
		return t.tail.finish(ctx, t.root.InterceptResponse(ctx, next))
	}
	return t.tail.finish(ctx, next(ctx))
}
