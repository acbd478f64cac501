package gqlhttp

import (
	"context"
	"net/http"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"paygraph/graph/admission"
	"paygraph/graph/loaders"
	"paygraph/graph/receipt"
	"paygraph/internal/opscope"
)

// budget is an operation's REST-call budget, put in the request's scope by
// the admission step, or in a WebSocket's (ConnectionBudget).
type budget interface {
	// charge charges restCalls; a refusal is the operation's error.
	charge(ctx context.Context, restCalls int) *gqlerror.Error
	// left is what the charge left of the merchant's REST-call budget,
	// for the cost receipt; ok false when there is none.
	left() (receipt.BudgetLeft, bool)
	// peek answers a dry run: what charge would, charging nothing.
	peek(ctx context.Context, restCalls int) (left receipt.BudgetLeft, refusal *gqlerror.Error, ok bool)
}

type budgetKey struct{}

func withBudget(ctx context.Context, b budget) context.Context {
	return opscope.WithValue(ctx, budgetKey{}, b)
}

func budgetFrom(ctx context.Context) budget {
	b, _ := ctx.Value(budgetKey{}).(budget)
	return b
}

// ChargeRESTCalls charges restCalls to the budget of ctx's request, if it
// has one (POST /auth/token's mint).
func ChargeRESTCalls(ctx context.Context, restCalls int) *gqlerror.Error {
	if b := budgetFrom(ctx); b != nil {
		return b.charge(ctx, restCalls)
	}
	return nil
}

// operationCharge is the extension that charges each operation's REST-call
// estimate to the budget in its context, after graph's query limits and
// before any field runs, on every transport; a dry run is only peeked at.
type operationCharge struct{}

var (
	_ graphql.HandlerExtension          = operationCharge{}
	_ graphql.OperationParameterMutator = operationCharge{}
	_ graphql.OperationContextMutator   = operationCharge{}
)

func (operationCharge) ExtensionName() string                   { return "RESTCallCharge" }
func (operationCharge) Validate(graphql.ExecutableSchema) error { return nil }

// MutateOperationParameters refuses a pair Admit refuses as soon as the
// root fields are known to make REST calls, before validation and the
// plan, so that a flood of invented pairs costs a parse-cache look-up each.
func (operationCharge) MutateOperationParameters(ctx context.Context, _ *graphql.RawParams) *gqlerror.Error {
	if !graphql.HasOperationContext(ctx) {
		return nil
	}
	if n, ok := admission.RootRESTCalls(graphql.GetOperationContext(ctx)); !ok || n == 0 {
		return nil
	}
	if b, ok := budgetFrom(ctx).(*restCallBudget); ok && b.admit {
		return b.admitNow(ctx)
	}
	return nil
}

func (operationCharge) MutateOperationContext(ctx context.Context, op *graphql.OperationContext) *gqlerror.Error {
	est, ok := admission.OperationEstimate(op)
	if !ok {
		return nil
	}
	b := budgetFrom(ctx)
	if b == nil {
		return nil
	}
	if est.DryRun {
		left, refusal, ok := b.peek(ctx, est.Calls)
		loaders.Tally(ctx).NoteDryRunBudget(op, left, ok, refusal != nil)
		return refusal
	}
	if err := b.charge(ctx, est.Calls); err != nil {
		return err
	}
	if left, ok := b.left(); ok {
		loaders.Tally(ctx).NoteLeft(op, left)
	}
	return nil
}

// setRateLimitHeaders sets the RateLimit headers of ctx's request from its
// decisions, once the operation's charge is made.
func setRateLimitHeaders(h http.Header, ctx context.Context) {
	if b, ok := budgetFrom(ctx).(*restCallBudget); ok {
		b.setHeaders(h)
	}
}
