package graph

import (
	"context"

	"github.com/vektah/gqlparser/v2/gqlerror"

	"paygraph/internal/opscope"
)

// RESTCallBudget is charged an operation's REST-call estimate (the
// complexity, complexity.go) once the operation passed every query limit
// and before any REST call is made. The HTTP edge's per-merchant rate
// limit (gqlhttp.RateLimit) puts one in the request's context: it knows
// the merchant and the response headers, the GraphQL server knows the
// estimate. A refusal is returned as the operation's error (RATE_LIMITED
// with extensions.retryAfter), so nothing of it runs.
type RESTCallBudget interface {
	ChargeRESTCalls(ctx context.Context, restCalls int) *gqlerror.Error
}

type restCallBudgetKey struct{}

// WithRESTCallBudget returns a context whose operation is charged to b.
func WithRESTCallBudget(ctx context.Context, b RESTCallBudget) context.Context {
	return opscope.WithValue(ctx, restCallBudgetKey{}, b)
}

// RESTCallBudgetFrom is the request's budget, or nil.
func RESTCallBudgetFrom(ctx context.Context) RESTCallBudget {
	b, _ := ctx.Value(restCallBudgetKey{}).(RESTCallBudget)
	return b
}

// chargeRESTCalls charges restCalls to the request's budget, if it has
// one (a request without credentials has none: it makes no REST call).
func chargeRESTCalls(ctx context.Context, restCalls int) *gqlerror.Error {
	if b := RESTCallBudgetFrom(ctx); b != nil {
		return b.ChargeRESTCalls(ctx, restCalls)
	}
	return nil
}

// RESTCallAdmitter is a RESTCallBudget that can also tell, before the
// operation is validated and its cost planned, whether its caller may
// make REST calls at all (gqlhttp.AdmitUnaccepted: a credential pair the
// REST API has not accepted, refused or over the shared budgets of such
// pairs). It is asked as soon as the root fields show that the operation
// will make REST calls, so that a flood of invented pairs is refused for
// the price of a parse-cache lookup, not of a plan (issue 22); asking it
// again later (ChargeRESTCalls) charges nothing more.
type RESTCallAdmitter interface {
	AdmitRESTCalls(ctx context.Context) *gqlerror.Error
}

// admitRESTCalls asks the request's budget, if it is a RESTCallAdmitter.
func admitRESTCalls(ctx context.Context) *gqlerror.Error {
	if a, ok := RESTCallBudgetFrom(ctx).(RESTCallAdmitter); ok {
		return a.AdmitRESTCalls(ctx)
	}
	return nil
}
