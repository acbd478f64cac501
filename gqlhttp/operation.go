package gqlhttp

import (
	"context"
	"paygraph/graph/errcode"
	"sync"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"paygraph/graph/loaders"
	"paygraph/internal/opscope"
	"paygraph/restclient"
)

// operationScope is the live transports' executor: each WebSocket operation
// gets what middlewares give a POST (scope, loaders, REST-call bound, access
// line) and is refused past its token's expiry or MaxOperations; a query or
// mutation gets RequestTimeout.
type operationScope struct {
	graphql.GraphExecutor
	b *liveBounds
	c *liveConn
}

// scopeStat keys, in a WebSocket operation's stats, the scope made for it
// until dispatched.
const scopeStat = "PaygraphOperationScope"

// CreateOperationContext is exec's, in a WebSocket operation's own scope, then the checks.
func (s operationScope) CreateOperationContext(ctx context.Context, params *graphql.RawParams) (*graphql.OperationContext, gqlerror.List) {
	c := s.c
	if !c.ws {
		return s.GraphExecutor.CreateOperationContext(ctx, params)
	}
	ctx = s.newScope(ctx)
	rc, errs := s.GraphExecutor.CreateOperationContext(ctx, params)
	if errs != nil {
		return rc, errs
	}
	if !c.expiresAt.IsZero() && !s.b.Now().Before(c.expiresAt) {
		return rc, gqlerror.List{{Message: "session token has expired", Extensions: map[string]any{"code": errcode.Unauthenticated}}}
	}
	// Taken last, so that an operation that gets its slot is dispatched, which
	// gives it back.
	if c.inFlight.Add(1) > int32(s.b.MaxOperations) {
		c.inFlight.Add(-1)
		err := gqlerror.Errorf("%d operations are in flight on this connection, the most it may have: wait for one to complete", s.b.MaxOperations)
		err.Extensions = map[string]any{"code": errcode.RateLimited}
		return rc, gqlerror.List{err}
	}
	rc.Stats.SetExtension(scopeStat, ctx)
	return rc, nil
}

// newScope is a WebSocket operation's open scope (mutators run one at a time).
func (s operationScope) newScope(ctx context.Context) context.Context {
	ctx = loaders.WithOperationLoaders(opscope.New(ctx))
	return restclient.WithRequestLimit(ctx, s.b.RESTCalls)
}

// DispatchOperation is exec's, in the operation's scope.
func (s operationScope) DispatchOperation(ctx context.Context, op *graphql.OperationContext) (graphql.ResponseHandler, context.Context) {
	c := s.c
	opCtx := ctx // gqlgen cancels it when the operation ends
	end := func() {}
	if c.ws {
		// The scope made before the mutators, below gqlgen's context.
		if sc, ok := op.Stats.GetExtension(scopeStat).(context.Context); ok {
			op.Stats.SetExtension(scopeStat, nil)
			ctx = opscope.Under(sc, ctx)
		} else {
			ctx = s.newScope(ctx) // an operation context made by another executor
		}
	}
	if s.b.RequestTimeout > 0 && op.Operation != nil && op.Operation.Operation != ast.Subscription {
		ctx, end = opscope.WithTimeout(ctx, s.b.RequestTimeout)
	}
	if c.ws {
		logged := func() {}
		if s.b.OperationLog != nil {
			ctx, logged = s.b.OperationLog(ctx, "websocket")
		}
		cancel := end
		end = func() {
			cancel()
			c.inFlight.Add(-1)
			logged()
		}
		opscope.Seal(ctx) // complete: the operation's goroutines only read it
	}
	// It ends when its handler has no more answers (its slot free before
	// gqlgen writes complete), or when its context ends.
	finish := sync.OnceFunc(end)
	context.AfterFunc(opCtx, finish)
	h, inner := s.GraphExecutor.DispatchOperation(ctx, op)
	return func(ctx context.Context) *graphql.Response {
		r := h(ctx)
		if r == nil {
			finish()
		}
		return r
	}, inner
}
