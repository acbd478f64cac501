package gqlhttp

import (
	"context"
	"errors"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"paygraph/graph/admission"
	"paygraph/graph/errcode"
	"paygraph/graph/loaders"
	"paygraph/graph/receipt"
	"paygraph/internal/opscope"
	"paygraph/ratelimit"
	"paygraph/restclient"
)

// budget is an operation's REST-call budget, from Admission or a WebSocket's.
type budget interface {
	// charge charges restCalls; a refusal is the operation's error.
	charge(ctx context.Context, restCalls int) *gqlerror.Error
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

// ChargeRESTCalls charges restCalls to ctx's budget, if any (POST /auth/token's mint).
func ChargeRESTCalls(ctx context.Context, restCalls int) *gqlerror.Error {
	if b := budgetFrom(ctx); b != nil {
		return b.charge(ctx, restCalls)
	}
	return nil
}

// operationCharge is the extension that charges each operation's REST-call
// estimate to its context's budget, after graph's limits and before any field
// runs; a dry run only peeks.
type operationCharge struct{}

var (
	_ graphql.HandlerExtension          = operationCharge{}
	_ graphql.OperationParameterMutator = operationCharge{}
	_ graphql.OperationContextMutator   = operationCharge{}
)

func (operationCharge) ExtensionName() string                   { return "RESTCallCharge" }
func (operationCharge) Validate(graphql.ExecutableSchema) error { return nil }

// MutateOperationParameters refuses a pair Admit refuses once the root fields
// are known to make REST calls, before validation and the plan: a flood of
// invented pairs costs a cache look-up each.
func (operationCharge) MutateOperationParameters(ctx context.Context, _ *graphql.RawParams) *gqlerror.Error {
	b, ok := budgetFrom(ctx).(*restCallBudget)
	if !ok || !b.admit || !graphql.HasOperationContext(ctx) {
		return nil
	}
	if n, ok := admission.RootRESTCalls(graphql.GetOperationContext(ctx)); ok && n > 0 {
		return b.admitNow(ctx)
	}
	return nil
}

func (operationCharge) MutateOperationContext(ctx context.Context, op *graphql.OperationContext) *gqlerror.Error {
	est, ok := admission.OperationEstimate(op)
	b := budgetFrom(ctx)
	if !ok || b == nil {
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
	if rb, ok := b.(*restCallBudget); ok { // a WebSocket operation's receipt carries no budget
		rb.mu.Lock()
		d := rb.rest
		rb.mu.Unlock()
		if d.Policy == ratelimit.PolicyRESTCalls { // what the charge left of the merchant's budget
			loaders.Tally(ctx).NoteLeft(op, budgetLeft(d))
		}
	}
	return nil
}

// setRateLimitHeaders sets ctx's RateLimit headers once the operation is charged.
func setRateLimitHeaders(h http.Header, ctx context.Context) {
	if b, ok := budgetFrom(ctx).(*restCallBudget); ok {
		b.setHeaders(h)
	}
}

// restCallBudget charges one request's operation to its merchant and, for an
// unaccepted pair (admit), first asks Admit whether its first REST call would
// be refused.
type restCallBudget struct {
	a        *Admission // its limiters charge, its OnRefused reports
	merchant string     // "": no merchant's budget is charged
	admit    bool
	edge     ratelimit.Decision // the request's own charge, for the headers
	mu       sync.Mutex
	rest     ratelimit.Decision // the operation's REST-call charge, for its receipt and headers
	charged  bool               // rest is set
	restSet  bool               // the headers are a REST-call charge's, not edge's (setHeaders)
}

func (b *restCallBudget) charge(ctx context.Context, restCalls int) *gqlerror.Error {
	if b.admit && restCalls > 0 {
		if err := b.admitNow(ctx); err != nil {
			return err
		}
	}
	if b.merchant == "" {
		return nil
	}
	d := b.a.c.Merchants.AllowRESTCalls(ctx, b.merchant, restCalls)
	b.mu.Lock()
	b.rest, b.charged = d, true
	b.mu.Unlock()
	return b.a.operationRefused(ctx, BudgetMerchantRESTCalls, restCallsRefusal(ctx, d, restCalls))
}

// setHeaders sets the tighter decision's headers once charged (the edge's are set).
func (b *restCallBudget) setHeaders(h http.Header) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.charged {
		return
	}
	if restTighter(b.edge, b.rest) {
		b.rest.SetHeaders(h)
		b.restSet = true
	} else if b.restSet {
		b.edge.SetHeaders(h)
		b.restSet = false
	}
}

// ConnectionBudget is the budget of a WebSocket's every operation (Live.Budget).
type ConnectionBudget struct{ a *Admission }

func (b *ConnectionBudget) peek(ctx context.Context, restCalls int) (receipt.BudgetLeft, *gqlerror.Error, bool) {
	return b.a.peekRESTCalls(ctx, b.a.callerOf(ctx).key, restCalls)
}

func (b *ConnectionBudget) charge(ctx context.Context, restCalls int) *gqlerror.Error {
	a, l := b.a, b.a.c.Merchants
	switch c := a.callerOf(ctx); {
	case c.merchant:
		d := l.Allow(ctx, c.key, restCalls)
		budget := BudgetMerchant
		if d.Policy == ratelimit.PolicyRESTCalls {
			budget = BudgetMerchantRESTCalls
		}
		return a.operationRefused(ctx, budget, restCallsRefusal(ctx, d, restCalls))
	case !c.pair:
		return nil // no REST call can be made
	case a.c.Anonymous != nil:
		if d := a.c.Anonymous.Allow(ctx, anonymousKey, 0); !d.Allowed {
			return a.operationRefused(ctx, BudgetAnonymous, refusalError(ctx, BudgetAnonymous, d))
		}
		fallthrough
	default:
		return a.operationRefused(ctx, BudgetMerchantRESTCalls, restCallsRefusal(ctx, l.AllowRESTCalls(ctx, c.key, restCalls), restCalls))
	}
}

func (b *restCallBudget) peek(ctx context.Context, restCalls int) (receipt.BudgetLeft, *gqlerror.Error, bool) {
	return b.a.peekRESTCalls(ctx, b.merchant, restCalls)
}

// peekRESTCalls is a dry run's check of key's REST-call budget.
func (a *Admission) peekRESTCalls(ctx context.Context, key string, restCalls int) (receipt.BudgetLeft, *gqlerror.Error, bool) {
	if key == "" {
		return receipt.BudgetLeft{}, nil, false
	}
	d := a.c.Merchants.PeekRESTCalls(ctx, key, restCalls)
	return budgetLeft(d), restCallsRefusal(ctx, d, restCalls), d.Policy == ratelimit.PolicyRESTCalls
}

// admitNow is Admit alone, asked before the operation's plan.
func (b *restCallBudget) admitNow(ctx context.Context) *gqlerror.Error {
	if err := b.a.c.Admit(ctx); err != nil {
		return b.a.operationRefused(ctx, BudgetUnaccepted, refusedError(ctx, err))
	}
	markAdmitted(ctx)
	return nil
}

// refusedError is Admit's refusal as the operation's error, marked for RefusalDelay.
func refusedError(ctx context.Context, err error) *gqlerror.Error {
	e := &gqlerror.Error{Message: err.Error(), Extensions: map[string]any{"code": errcode.Of(err)}}
	var retryAfter time.Duration
	if re, ok := errors.AsType[*restclient.Error](err); ok {
		e.Message, retryAfter = re.Message, re.RetryAfter
		if re.Kind == restclient.KindRateLimited && re.RetryAfter > 0 {
			e.Extensions["retryAfter"] = int(math.Ceil(re.RetryAfter.Seconds()))
		}
	}
	markRefused(ctx, retryAfter)
	return e
}

func budgetLeft(d ratelimit.Decision) receipt.BudgetLeft {
	return receipt.BudgetLeft{Remaining: d.Remaining, Limit: d.Limit, ResetSeconds: int(math.Ceil(d.Reset.Seconds()))}
}

// restCallsRefusal is the operation's error when d refused restCalls.
func restCallsRefusal(ctx context.Context, d ratelimit.Decision, restCalls int) *gqlerror.Error {
	switch {
	case d.TooCostly: // no wait would admit it
		err := gqlerror.Errorf("query may make %d REST calls, more than this merchant's rate limit admits at once (%d)", restCalls, d.Limit)
		err.Extensions = map[string]any{"code": errcode.ComplexityLimit}
		return err
	case !d.Allowed:
		return refusalError(ctx, BudgetMerchantRESTCalls, d)
	}
	return nil
}

// restTighter reports whether the headers describe rest, not edge: a refusal,
// else the smaller share left (a decision without a policy charged nothing).
func restTighter(edge, rest ratelimit.Decision) bool {
	switch {
	case !rest.Allowed || edge.Policy == "":
		return true
	case rest.Policy == "":
		return false
	}
	return int64(rest.Remaining)*int64(edge.Limit) < int64(edge.Remaining)*int64(rest.Limit)
}
