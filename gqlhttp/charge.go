// The rate-limit charge of each operation's REST-call estimate, at the
// edge (issue 21): graph computes the estimate, this extension of the
// GraphQL server charges it and records the decision, and the edge's
// response writer sets the rate-limit headers from it.

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

// budget is an operation's REST-call budget, put in the request's scope
// by the admission step (Admission.budgetFor: a merchant's, or admitBudget
// for a pair not yet accepted), or in a WebSocket
// operation's context (ConnectionBudget).
type budget interface {
	// charge charges restCalls; a refusal is the operation's error.
	charge(ctx context.Context, restCalls int) *gqlerror.Error
	// left is what the charge left of the merchant's REST-call budget
	// (the cost receipt's figure); ok false when there is none to say.
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
// has one (a request without credentials has none: it makes no REST
// call). POST /auth/token's mint is charged so (gateway/tokens.go).
func ChargeRESTCalls(ctx context.Context, restCalls int) *gqlerror.Error {
	if b := budgetFrom(ctx); b != nil {
		return b.charge(ctx, restCalls)
	}
	return nil
}

// operationCharge is the extension that charges each operation's
// REST-call estimate (admission.OperationEstimate) to the budget in its
// context, once graph's query limits accepted the operation and before
// any field runs, on every transport (POST, GET, SSE, each WebSocket
// operation, a @defer stream's operation): a refusal is the operation's
// error, RATE_LIMITED with extensions.retryAfter, and nothing of it runs.
// A dry run is peeked at, never charged (receipt.Tally.NoteDryRunBudget).
type operationCharge struct{}

var (
	_ graphql.HandlerExtension          = operationCharge{}
	_ graphql.OperationParameterMutator = operationCharge{}
	_ graphql.OperationContextMutator   = operationCharge{}
)

func (operationCharge) ExtensionName() string                   { return "RESTCallCharge" }
func (operationCharge) Validate(graphql.ExecutableSchema) error { return nil }

// MutateOperationParameters refuses, as soon as graph's query limits saw
// that the operation's root fields will make REST calls (before
// validation, coercion and the plan), a credential pair that may make
// none (admitBudget: refused by the REST API, or not yet
// accepted and over the shared budgets of such pairs), so that a flood of
// invented pairs costs a parse-cache lookup each (issue 22).
func (operationCharge) MutateOperationParameters(ctx context.Context, _ *graphql.RawParams) *gqlerror.Error {
	if !graphql.HasOperationContext(ctx) {
		return nil
	}
	if n, ok := admission.RootRESTCalls(graphql.GetOperationContext(ctx)); !ok || n == 0 {
		return nil
	}
	if a, ok := budgetFrom(ctx).(admitBudget); ok {
		return a.admitNow(ctx)
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

// setRateLimitHeaders sets the RateLimit headers of ctx's request from
// its decisions (restCallBudget): the edge's response writer
// calls it once the operation's charge is made, before its status line.
func setRateLimitHeaders(h http.Header, ctx context.Context) {
	for b := budgetFrom(ctx); b != nil; {
		switch v := b.(type) {
		case *restCallBudget:
			v.setHeaders(h)
			return
		case admitBudget:
			b = v.next
		default:
			return
		}
	}
}
