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
	"paygraph/graph/errcode"
	"sync"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"paygraph/graph/loaders"
	"paygraph/internal/opscope"
	"paygraph/restclient"
)

// operationScope is the per-operation scope of the live transports, the
// executor the WebSocket and SSE transports are handed (exec, with the
// connection c):
//
//   - before gqlgen's first mutator runs for an operation of a WebSocket,
//     its own scope (internal/opscope) is made below the connection's
//     sealed one, with fresh loaders (loaders.WithOperationLoaders: nothing
//     cached outlives the operation) and its bound on REST calls in
//     flight: whatever the mutators decode, plan or record for it (its
//     variables, its cost plan and REST-call account) is the operation's,
//     never the connection's, and is dropped with it when a mutator
//     refuses it;
//   - after the mutators (the query limits and the rate limit, which
//     operationCharge (charge.go) charges to OperationBudget), a session
//     token past its expiry refuses it, UNAUTHENTICATED, and so does an
//     operation past MaxOperations in flight on its connection
//     (RATE_LIMITED): refused there, an operation starts no goroutine,
//     and its answer is written by the read loop, which a client that
//     stops reading thus stops too;
//   - when it starts, its scope is put below the context gqlgen gives
//     the operation (its cancellation), and gets its access-log line and,
//     for a query or mutation (WebSocket or SSE), RequestTimeout.
//
// An operation of an SSE stream is the stream's one request: the
// request's scope is the operation's.
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

// scopeStat is the key, in an accepted WebSocket operation's stats, of
// the scope CreateOperationContext made for it, until DispatchOperation
// takes it: the operation context is the one thing gqlgen hands from
// one to the other.
const scopeStat = "PaygraphOperationScope"

// CreateOperationContext is exec's, in a WebSocket operation's own scope,
// then the checks above: after every operation-context mutator, as the
// last of them ran. A refused operation's scope is held by nothing once
// this returns.
func (s operationScope) CreateOperationContext(ctx context.Context, params *graphql.RawParams) (*graphql.OperationContext, gqlerror.List) {
	if s.c.ws {
		ctx = s.newScope(ctx)
	}
	rc, errs := s.GraphExecutor.CreateOperationContext(ctx, params)
	if errs != nil {
		return rc, errs
	}
	if err := s.mutateOperationContext(); err != nil {
		return rc, gqlerror.List{err}
	}
	if s.c.ws {
		rc.Stats.SetExtension(scopeStat, ctx)
	}
	return rc, nil
}

// newScope is a WebSocket operation's scope below ctx, open (the
// mutators run on the read loop's goroutine, one operation at a time).
func (s operationScope) newScope(ctx context.Context) context.Context {
	ctx = loaders.WithOperationLoaders(opscope.New(ctx))
	return restclient.WithRequestLimit(ctx, s.b.RESTCalls)
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
		err.Extensions = map[string]any{"code": errcode.Unauthenticated}
		return err
	}
	// Taken here, the last of the mutators, so that an operation that
	// gets its slot is dispatched (gqlgen dispatches every operation whose
	// context it made): interceptOperation gives it back when it ends.
	if c.inFlight.Add(1) > int32(s.b.MaxOperations) {
		c.inFlight.Add(-1)
		err := gqlerror.Errorf("%d operations are in flight on this connection, the most it may have: wait for one to complete", s.b.MaxOperations)
		err.Extensions = map[string]any{"code": errcode.RateLimited}
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
		// The operation's own scope, made before its mutators ran
		// (CreateOperationContext), below gqlgen's context of it: what
		// the connection proved (its caller, merchant and budget) is
		// read through it, and what is the operation's (loaders, REST
		// slots, deadline, access-log record) is filled in, one context
		// value for them all.
		if sc, ok := op.Stats.GetExtension(scopeStat).(context.Context); ok {
			op.Stats.SetExtension(scopeStat, nil)
			ctx = opscope.Under(sc, ctx)
		} else {
			ctx = s.newScope(ctx) // an operation context made by another executor
		}
	}
	if s.b.RequestTimeout > 0 && op.Operation != nil && op.Operation.Operation != ast.Subscription {
		var cancel context.CancelFunc
		ctx, cancel = opscope.WithTimeout(ctx, s.b.RequestTimeout)
		end = cancel
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
