package graph

// An operation's state in one context value and one allocation (its
// response budget, root fast path state and caller), and lazyQueries, which
// prepares gqlgen's executor only when needed: never when the root fast
// path answers.

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"paygraph/graph/budget"
	"paygraph/graph/customerdata"
	"paygraph/graph/live"
	"paygraph/sessiontoken"
)

// opState is one operation's: budget and root point into it, or are nil
// (no budget: MaxBytes off, a subscription; not on the root fast path).
type opState struct {
	oc        *graphql.OperationContext
	budget    *budget.Budget
	root      *rootState
	budgetVal budget.Budget
	rootVal   rootState
	// caller is read once by graphTail (then known is set): a look-up of a
	// key the context does not hold walks every context of the request.
	caller callerFacts
}

// callerFacts are what an operation's context holds of its caller: the
// session-token scope (hasScope false: all reads), customer-data level,
// masked paths and live events.
type callerFacts struct {
	known    bool
	scope    Scope
	hasScope bool
	level    sessiontoken.CustomerData
	masked   *customerdata.Paths
	live     *live.Events
}

// customerDataOf is the request's customer-data level: its session token's
// (full for the credential headers), lowered to the deployment's maximum.
func customerDataOf(ctx context.Context) sessiontoken.CustomerData {
	if c := callerOf(ctx); c != nil {
		return c.level
	}
	s, ok := scopeIn(ctx)
	return customerDataIn(ctx, s, ok)
}

// customerDataIn is customerDataOf, the scope (s, ok) read already.
func customerDataIn(ctx context.Context, s Scope, ok bool) sessiontoken.CustomerData {
	if !ok {
		return customerdata.Lower(ctx, sessiontoken.CustomerDataFull)
	}
	return customerdata.Lower(ctx, s.CustomerData())
}

// maskedPathsFrom is the operation's customerdata.Paths, nil at full.
func maskedPathsFrom(ctx context.Context) *customerdata.Paths {
	if c := callerOf(ctx); c != nil {
		return c.masked
	}
	return customerdata.PathsIn(ctx)
}

func subscriber(ctx context.Context) live.Subscriber {
	return live.Subscriber{Events: liveEventsFrom(ctx), Level: customerDataOf(ctx)}
}

// liveEventsFrom is the operation's live.Events, nil but in a subscription.
func liveEventsFrom(ctx context.Context) *live.Events {
	if c := callerOf(ctx); c != nil {
		return c.live
	}
	return live.EventsIn(ctx)
}

// callerOf is the facts of ctx's operation, when graphTail read them.
func callerOf(ctx context.Context) *callerFacts {
	if st := opStateFrom(ctx); st != nil && st.caller.known {
		return &st.caller
	}
	return nil
}

type opStateKey struct{}

// budgetFrom returns the operation's response budget; nil: no limit.
func budgetFrom(ctx context.Context) *budget.Budget {
	if st := opStateFrom(ctx); st != nil {
		return st.budget
	}
	return nil
}

func opStateFrom(ctx context.Context) *opState {
	st, _ := ctx.Value(opStateKey{}).(*opState)
	return st
}

// rootStateFrom is the operation's root fast path state, nil when not tried.
func rootStateFrom(ctx context.Context) *rootState {
	if st := opStateFrom(ctx); st != nil {
		return st.root
	}
	return nil
}

// lazyQueries runs the Exec of a query the root fast path tries only when
// gqlgen's executor is asked for a response. That Exec (of the gqlgen
// graph/gen verifies) only prepares the executor, running no resolver and
// adding no error, so putting it off changes nothing but when.
type lazyQueries struct{ graphql.ExecutableSchema }

func (s lazyQueries) Exec(ctx context.Context) graphql.ResponseHandler {
	st := opStateFrom(ctx)
	if st == nil || st.root == nil || st.oc.Operation == nil || st.oc.Operation.Operation != ast.Query {
		return s.ExecutableSchema.Exec(ctx)
	}
	root := st.root
	return func(rctx context.Context) *graphql.Response {
		if root.exec == nil {
			root.exec = s.ExecutableSchema.Exec(ctx)
		}
		return root.exec(rctx)
	}
}
