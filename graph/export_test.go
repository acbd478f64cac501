package graph

// The differential tests' chained mode (ServerConfig.chainedTail):
// graphTail's parts registered one by one, as gqlgen runs separate
// extensions, for TestResponseTailMatchesChain to compare with graphTail.

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"

	"paygraph/graph/admission"
	"paygraph/graph/budget"
	"paygraph/graph/customerdata"
	"paygraph/graph/live"
)

// chainTail registers g's parts in its order, the first outermost.
func chainTail(srv *handler.Server, g graphTail) {
	srv.Use(tailStep{name: "APQCommit", prepare: func(ctx context.Context) context.Context {
		g.commit.Commit(ctx)
		return ctx
	}})
	srv.Use(g.tail.cost)
	srv.Use(budgetStep(g.tail.budget))
	srv.Use(tailStep{name: "ErrorCap", finish: func(_ context.Context, resp *graphql.Response) *graphql.Response {
		return admission.ErrorCap{}.Finish(resp)
	}})
	srv.Use(liveStep)
	srv.Use(customerDataStep)
	if g.root != nil {
		srv.Use(*g.root)
	}
}

// withOpState returns ctx with the state of operation oc: the one it
// holds already (an interceptor further out made it), or a new one.
func withOpState(ctx context.Context, oc *graphql.OperationContext) (context.Context, *opState) {
	if st := opStateFrom(ctx); st != nil && st.oc == oc {
		return ctx, st
	}
	st := &opState{oc: oc}
	return context.WithValue(ctx, opStateKey{}, st), st
}

var (
	_ graphql.HandlerExtension     = rootFast{}
	_ graphql.OperationInterceptor = rootFast{}
	_ graphql.ResponseInterceptor  = rootFast{}
)

func (rootFast) ExtensionName() string                   { return "PaygraphRootFastPath" }
func (rootFast) Validate(graphql.ExecutableSchema) error { return nil }

func (e rootFast) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	oc := graphql.GetOperationContext(ctx)
	ctx, st := withOpState(ctx, oc)
	return e.intercept(ctx, oc, st, next)
}

// tailStep is a step of responseTail as an extension (chainTail); a nil
// prepare or finish passes the context or response through.
type tailStep struct {
	name    string
	prepare func(context.Context) context.Context
	finish  func(context.Context, *graphql.Response) *graphql.Response
}

func (s tailStep) ExtensionName() string                 { return s.name }
func (tailStep) Validate(graphql.ExecutableSchema) error { return nil }

func (s tailStep) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	if s.prepare != nil {
		ctx = s.prepare(ctx)
	}
	return next(ctx)
}

func (s tailStep) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	if s.finish == nil {
		return next(ctx)
	}
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
