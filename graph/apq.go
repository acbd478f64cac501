// Automatic persisted queries are registered only once the query has
// earned it (issue 22, item 3): gqlgen's APQ extension stores a query with
// its hash in MutateOperationParameters, before the query is parsed, so
// 5,000 anonymous 32 KB strings that were not GraphQL were each stored
// (Redis 1 MB -> 159 MB for 24 h). Here its Add only notes the pair in the
// operation's context, and apqCommit stores it after the query parsed,
// passed the query limits and the complexity limit, validated and was
// charged to its merchant's rate limit, and only for a request with
// credentials.

package graph

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"paygraph/restclient"
)

// apqPendingExt names the operation's pending registration in its Stats.
const apqPendingExt = "paygraph.apqPending"

type apqPending struct{ key, query string }

// pendingAPQ is the cache gqlgen's APQ extension sees: Get is the store's,
// Add only notes the registration in the operation context.
type pendingAPQ struct{ store graphql.Cache[string] }

func (p pendingAPQ) Get(ctx context.Context, key string) (string, bool) {
	return p.store.Get(ctx, key)
}

// Add notes key and query for apqCommit; outside an operation (never from
// gqlgen's extension) it stores nothing.
func (p pendingAPQ) Add(ctx context.Context, key, query string) {
	if !graphql.HasOperationContext(ctx) {
		return
	}
	graphql.GetOperationContext(ctx).Stats.SetExtension(apqPendingExt, &apqPending{key: key, query: query})
}

// apqCommit stores the operation's pending registration. It is a
// graphql.OperationContextMutator registered after queryLimits: gqlgen
// runs those after parsing and validation, in order, and stops at the
// first refusal, so it runs only for an operation every limit and the
// rate limit accepted.
//
// A request without credentials (restclient.CredentialsFrom) registers
// nothing: it is charged to no merchant's rate limit, so its
// registrations would cost Redis and the heap without a bound. Its query
// still runs; its next request by hash alone is answered
// PERSISTED_QUERY_NOT_FOUND and the client sends the query again (the
// APQ protocol's usual miss). A hash a merchant registered serves anyone.
type apqCommit struct{ store graphql.Cache[string] }

var (
	_ graphql.HandlerExtension        = apqCommit{}
	_ graphql.OperationContextMutator = apqCommit{}
)

func (apqCommit) ExtensionName() string                          { return "APQCommit" }
func (apqCommit) Validate(schema graphql.ExecutableSchema) error { return nil }

func (a apqCommit) MutateOperationContext(ctx context.Context, opCtx *graphql.OperationContext) *gqlerror.Error {
	p, _ := opCtx.Stats.GetExtension(apqPendingExt).(*apqPending)
	if p == nil || opCtx.Operation == nil {
		return nil
	}
	if _, ok := restclient.CredentialsFrom(ctx); ok {
		a.store.Add(ctx, p.key, p.query)
	}
	return nil
}
