// Credential pairs the REST API has not accepted, at the /graphql edge
// (issue 22): an operation that will make REST calls is refused with one
// error, before any field runs, when its pair's first call would be.

package gqlhttp

import (
	"context"
	"errors"
	"math"
	"paygraph/graph/errcode"
	"time"

	"github.com/vektah/gqlparser/v2/gqlerror"

	"paygraph/graph/receipt"
	"paygraph/restclient"
)

// admitBudget is the REST-call budget of an operation of a pair not yet
// accepted (Admission.budgetFor): it asks admit
// (restclient.Client.Admit), once the operation's estimate is known
// (operationCharge, charge.go), whether its pair's first REST call would
// be refused, then charges next, the pair's REST-call budget, if any.
// admit only looks: the budgets of unaccepted pairs are spent by the
// calls made, so an operation refused before any call (a forged cursor)
// spends none of them. An operation whose pair the REST API refused, or
// whose first call would be over the budgets of unaccepted pairs, gets
// that one error (UNAUTHENTICATED, FORBIDDEN or RATE_LIMITED with
// extensions.retryAfter) and nothing of it runs: without it,
// nodes(ids: [100 ids]) answered 100 errors, each costing the replica CPU
// that a flood of invented pairs would spend. An operation that makes no
// REST call is not asked.
type admitBudget struct {
	a    *Admission // its Admit asks, its OnRefused reports
	next budget
}

func (b admitBudget) charge(ctx context.Context, restCalls int) *gqlerror.Error {
	if restCalls > 0 {
		if err := b.admitNow(ctx); err != nil {
			return err
		}
	}
	if b.next != nil {
		return b.next.charge(ctx, restCalls)
	}
	return nil
}

// admitNow is admit alone, asked before the operation's plan
// (operationCharge's MutateOperationParameters); charge asks again (admit
// charges nothing).
func (b admitBudget) admitNow(ctx context.Context) *gqlerror.Error {
	if err := b.a.c.Admit(ctx); err != nil {
		return b.a.operationRefused(ctx, BudgetUnaccepted, refusedError(ctx, err))
	}
	markAdmitted(ctx)
	return nil
}

var _ budget = admitBudget{}

// left and peek are the wrapped budget's (the receipt's and the dry run's
// figures are the rate limit's).
func (b admitBudget) left() (receipt.BudgetLeft, bool) {
	if b.next != nil {
		return b.next.left()
	}
	return receipt.BudgetLeft{}, false
}

func (b admitBudget) peek(ctx context.Context, restCalls int) (receipt.BudgetLeft, *gqlerror.Error, bool) {
	if b.next != nil {
		return b.next.peek(ctx, restCalls)
	}
	return receipt.BudgetLeft{}, nil, false
}

// refusedError marks the request refused (RefusalDelay holds its answer
// for the refusal's Retry-After) and is admitError.
func refusedError(ctx context.Context, err error) *gqlerror.Error {
	var re *restclient.Error
	var retryAfter time.Duration
	if errors.As(err, &re) {
		retryAfter = re.RetryAfter
	}
	markRefused(ctx, retryAfter)
	return admitError(err)
}

// admitError is the operation's error for a refusal of Admit.
func admitError(err error) *gqlerror.Error {
	e := &gqlerror.Error{Message: err.Error(), Extensions: map[string]any{"code": errcode.Of(err)}}
	var re *restclient.Error
	if errors.As(err, &re) {
		e.Message = re.Message
		if re.Kind == restclient.KindRateLimited && re.RetryAfter > 0 {
			e.Extensions["retryAfter"] = int(math.Ceil(re.RetryAfter.Seconds()))
		}
	}
	return e
}
