package gqlhttp

// This file makes one scope per GraphQL operation of a live connection.
// A POST or GET is one operation in one HTTP request, and the middlewares
// of the /graphql route make its scope (loaders, deadline, rate limit,
// access log). A WebSocket carries many operations in one upgrade request,
// and an SSE stream may carry a query: operationScope, around the
// executor those transports are handed, gives each of them what that
// request cannot, when gqlgen starts it.

import (
	"context"
	"sync"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"paygraph/graph"
	"paygraph/internal/opscope"
	"paygraph/restclient"
)

// operationScope is the per-operation scope of the live transports, the
// executor the WebSocket and SSE transports are handed (exec, with the
// connection c):
//
//   - before an operation of a WebSocket runs (in gqlgen's read loop, after
//     the query limits and the rate limit, which operationCharge
//     (charge.go) charges to OperationBudget), a session token past its expiry refuses
//     it, UNAUTHENTICATED, and so does an operation past MaxOperations in
//     flight on its connection (RATE_LIMITED): refused there, an
//     operation starts no goroutine, and its answer is written by the read
//     loop, which a client that stops reading thus stops too;
//   - when it starts, it gets fresh loaders (graph.WithOperationLoaders:
//     nothing cached outlives it), its bound on REST calls in flight, its
//     access-log line, and, for a query or mutation (WebSocket or SSE),
//     RequestTimeout.
//
// It wraps the executor rather than being a gqlgen extension, so that the
// operations of every other request (POST, GET) do not pay for it: gqlgen
// runs an extension's interceptor, a closure made for it, for every
// operation of the server (issue 25).
type operationScope struct {
	graphql.GraphExecutor
	b *liveBounds
	c *liveConn
}

// CreateOperationContext is exec's, then the checks above: after every
// operation-context mutator, as the last of them ran.
func (s operationScope) CreateOperationContext(ctx context.Context, params *graphql.RawParams) (*graphql.OperationContext, gqlerror.List) {
	rc, errs := s.GraphExecutor.CreateOperationContext(ctx, params)
	if errs != nil {
		return rc, errs
	}
	if err := s.mutateOperationContext(); err != nil {
		return rc, gqlerror.List{err}
	}
	return rc, nil
}

// DispatchOperation is exec's, in the operation's scope.
func (s operationScope) DispatchOperation(ctx context.Context, rc *graphql.OperationContext) (graphql.ResponseHandler, context.Context) {
	inner := ctx
	h := s.interceptOperation(ctx, rc, func(ctx context.Context) graphql.ResponseHandler {
		var h graphql.ResponseHandler
		h, inner = s.GraphExecutor.DispatchOperation(ctx, rc)
		return h
	})
	return h, inner
}

func (s operationScope) mutateOperationContext() *gqlerror.Error {
	c := s.c
	if !c.ws {
		return nil
	}
	if !c.expiresAt.IsZero() && !s.b.Now().Before(c.expiresAt) {
		err := gqlerror.Errorf("session token has expired")
		err.Extensions = map[string]any{"code": graph.CodeUnauthenticated}
		return err
	}
	// Taken here, the last of the mutators, so that an operation that
	// gets its slot is dispatched (gqlgen dispatches every operation whose
	// context it made): interceptOperation gives it back when it ends.
	if c.inFlight.Add(1) > int32(s.b.MaxOperations) {
		c.inFlight.Add(-1)
		err := gqlerror.Errorf("%d operations are in flight on this connection, the most it may have: wait for one to complete", s.b.MaxOperations)
		err.Extensions = map[string]any{"code": graph.CodeRateLimited}
		return err
	}
	return nil
}

func (s operationScope) interceptOperation(ctx context.Context, op *graphql.OperationContext, next graphql.OperationHandler) graphql.ResponseHandler {
	c := s.c
	// The operation's own context: gqlgen cancels it when the operation
	// ended and its last message was written (WebSocket), or with the
	// request (SSE).
	opCtx := ctx
	end := func() {}
	if c.ws {
		// The operation's own scope (internal/opscope), below the
		// connection's sealed one: what the connection proved (its
		// caller, merchant and budget) is read through it, and what is
		// the operation's (deadline, loaders, REST slots, access-log
		// record) is filled in, one context value for them all.
		ctx = opscope.New(ctx)
	}
	if s.b.RequestTimeout > 0 && op.Operation != nil && op.Operation.Operation != ast.Subscription {
		var cancel context.CancelFunc
		ctx, cancel = opscope.WithTimeout(ctx, s.b.RequestTimeout)
		end = cancel
	}
	if c.ws {
		ctx = graph.WithOperationLoaders(ctx)
		ctx = restclient.WithRequestLimit(ctx, s.b.RESTCalls)
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
	// It ends when its handler says it has no more answers (its last one
	// is written by then: the slot is free before gqlgen writes its
	// complete, so a client that waits for that to send the next one is
	// never refused), or when its context ends, whichever comes first.
	var once sync.Once
	finish := func() { once.Do(end) }
	context.AfterFunc(opCtx, finish)
	h := next(ctx)
	return func(ctx context.Context) *graphql.Response {
		r := h(ctx)
		if r == nil {
			finish()
		}
		return r
	}
}
