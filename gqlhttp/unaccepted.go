package gqlhttp

import (
	"context"
	"errors"
	"math"
	"paygraph/graph/errcode"

	"github.com/vektah/gqlparser/v2/gqlerror"

	"paygraph/graph/receipt"
	"paygraph/restclient"
)

// admitBudget is the REST-call budget of an operation of a pair not yet
// accepted: it asks Admit whether the pair's first REST call would be
// refused, then charges next; a refused operation runs nothing, so that a
// flood of invented pairs costs one error an operation, not one a field.
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

// admitNow is Admit alone, asked before the operation's plan.
func (b admitBudget) admitNow(ctx context.Context) *gqlerror.Error {
	if err := b.a.c.Admit(ctx); err != nil {
		return b.a.operationRefused(ctx, BudgetUnaccepted, refusedError(ctx, err))
	}
	markAdmitted(ctx)
	return nil
}

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

// refusedError marks the request refused (RefusalDelay holds its answer)
// and is the operation's error for a refusal of Admit.
func refusedError(ctx context.Context, err error) *gqlerror.Error {
	e := &gqlerror.Error{Message: err.Error(), Extensions: map[string]any{"code": errcode.Of(err)}}
	var re *restclient.Error
	if !errors.As(err, &re) {
		markRefused(ctx, 0)
		return e
	}
	markRefused(ctx, re.RetryAfter)
	e.Message = re.Message
	if re.Kind == restclient.KindRateLimited && re.RetryAfter > 0 {
		e.Extensions["retryAfter"] = int(math.Ceil(re.RetryAfter.Seconds()))
	}
	return e
}
