package graph

// The response tail: the extensions of graph's own that only prepare the
// operation's context and then look at the response next returned
// (the cost receipt, the response budget, the error cap, a subscription's
// live events, the customer-data note), run as one gqlgen extension.
// gqlgen makes a closure per interceptor per operation to chain them
// (processExtensions); these five in a row did nothing with the chain but
// call next, so one interceptor of each kind does their work in the same
// order, with the same contexts, at one closure each instead of five and
// three (issue 25: 6 allocations a request).

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
)

// responseTail is, in one extension, what registering costExtension,
// ResponseBudget, errorCap, liveEventsExtension and customerDataExtension
// in that order did (the first outermost): TestResponseTailMatchesChain
// compares the two.
type responseTail struct {
	cost   costExtension
	budget ResponseBudget
}

var (
	_ graphql.HandlerExtension     = responseTail{}
	_ graphql.OperationInterceptor = responseTail{}
	_ graphql.ResponseInterceptor  = responseTail{}
)

func (responseTail) ExtensionName() string                   { return "ResponseTail" }
func (responseTail) Validate(graphql.ExecutableSchema) error { return nil }

// InterceptOperation prepares the context as the operation interceptors
// did, outermost first (the cost receipt and the error cap have none).
func (t responseTail) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	ctx = t.budget.prepare(ctx)
	ctx = liveEventsExtension{}.prepare(ctx)
	ctx = customerDataExtension{}.prepare(ctx)
	return next(ctx)
}

// InterceptResponse finishes the response as the response interceptors
// did, innermost first. Each of them called next with the context it was
// given, so each finish sees the same ctx.
func (t responseTail) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	resp := next(ctx)
	resp = customerDataExtension{}.finish(ctx, resp)
	resp = liveEventsExtension{}.finish(ctx, resp)
	resp = errorCap{}.finish(resp)
	resp = t.budget.finish(ctx, resp)
	return t.cost.finish(ctx, resp)
}
