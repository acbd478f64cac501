// Automatic persisted queries are registered only once the query has
// earned it (issue 22, item 3): gqlgen's APQ extension stores a query with
// its hash in MutateOperationParameters, before the query is parsed, so
// 5,000 anonymous 32 KB strings that were not GraphQL were each stored
// (Redis 1 MB -> 159 MB for 24 h). Here apqExtension only notes the pair
// in the operation's context, and apqCommit stores it after the query parsed,
// passed the query limits and the complexity limit, validated and was
// charged to its merchant's rate limit, and only for a request with
// credentials.
//
// The extension is paygraph's own (apqExtension), not gqlgen's
// extension.AutomaticPersistedQuery with a noting cache: gqlgen's decodes
// the persistedQuery member with mapstructure (reflection: 28 of the 236
// allocations of a request by hash, BenchmarkCachedQueryLookup, issue 25)
// and notes ApqStats, which nothing here reads. Its answers are
// gqlgen's (v0.17.98), message for message.

package graph

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"

	"github.com/99designs/gqlgen/graphql"
	gqlerrcode "github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"paygraph/restclient"
)

// apqPendingExt names the operation's pending registration in its Stats.
const apqPendingExt = "paygraph.apqPending"

type apqPending struct{ key, query string }

// apqExtension serves automatic persisted queries: a request with a hash
// alone runs the query stored under it (PERSISTED_QUERY_NOT_FOUND
// otherwise), and a request with the query and its hash notes it for
// apqCommit. It is registered after trustedDocuments and before
// queryLimits, apqCommit after queryLimits.
type apqExtension struct{ store graphql.Cache[string] }

var (
	_ graphql.HandlerExtension          = apqExtension{}
	_ graphql.OperationParameterMutator = apqExtension{}
)

func (apqExtension) ExtensionName() string                   { return "AutomaticPersistedQuery" }
func (apqExtension) Validate(graphql.ExecutableSchema) error { return nil }

// MutateOperationParameters is gqlgen's AutomaticPersistedQuery's, but a
// registration is only noted for MutateOperationContext: a request by
// hash gets its query from the store, one with its query has the hash
// checked (the one hash of the text this request makes).
func (a apqExtension) MutateOperationParameters(ctx context.Context, p *graphql.RawParams) *gqlerror.Error {
	raw := p.Extensions["persistedQuery"]
	if raw == nil {
		return nil
	}
	hash, version, ok := apqParams(raw)
	if !ok {
		return gqlerror.Errorf("invalid APQ extension data")
	}
	if version != 1 {
		return gqlerror.Errorf("unsupported APQ version")
	}
	if p.Query == "" {
		q, ok := a.store.Get(ctx, hash)
		if !ok {
			err := gqlerror.Errorf("PersistedQueryNotFound")
			gqlerrcode.Set(err, "PERSISTED_QUERY_NOT_FOUND")
			return err
		}
		p.Query = q
		return nil
	}
	if !sameHash(ctx, p.Query, hash) {
		return gqlerror.Errorf("provided APQ hash does not match query")
	}
	graphql.GetOperationContext(ctx).Stats.SetExtension(apqPendingExt, &apqPending{key: hash, query: p.Query})
	return nil
}

// textHashExt names, in the operation's Stats, the SHA-256 (hex) of the
// query text that trustedDocuments computed for an APQ registration.
const textHashExt = "paygraph.textHash"

// sameHash reports whether hash is the SHA-256 (lower-case hex) of query:
// the one trustedDocuments noted for this request's text, or computed
// here; a request's text is hashed once.
func sameHash(ctx context.Context, query, hash string) bool {
	if h, ok := graphql.GetOperationContext(ctx).Stats.GetExtension(textHashExt).(string); ok {
		return h == hash
	}
	sum := sha256.Sum256([]byte(query))
	var hexSum [2 * sha256.Size]byte
	hex.Encode(hexSum[:], sum[:])
	return string(hexSum[:]) == hash
}

// apqParams reads persistedQuery's sha256Hash and version as gqlgen's
// mapstructure.Decode does: a map, a string hash, an integer version (a
// JSON number; a float is truncated), null members as absent.
func apqParams(raw any) (hash string, version int64, ok bool) {
	m, ok := raw.(map[string]any)
	if !ok {
		return "", 0, false
	}
	switch h := m["sha256Hash"].(type) {
	case nil:
	case string:
		hash = h
	default:
		return "", 0, false
	}
	switch v := m["version"].(type) {
	case nil:
	case json.Number:
		n, err := v.Int64()
		if err != nil {
			return "", 0, false
		}
		version = n
	case float64:
		if math.IsNaN(v) {
			return "", 0, false
		}
		version = int64(v)
	case int:
		version = int64(v)
	case int64:
		version = v
	default:
		return "", 0, false
	}
	return hash, version, true
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
	_ graphql.HandlerExtension     = apqCommit{}
	_ graphql.OperationInterceptor = apqCommit{}
)

func (apqCommit) ExtensionName() string                   { return "APQCommit" }
func (apqCommit) Validate(graphql.ExecutableSchema) error { return nil }

// InterceptOperation stores the query once every operation-context
// mutator accepted it: the query limits here, and the edge's rate-limit
// charge (gqlhttp/charge.go), which runs after graph's.
func (a apqCommit) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	a.commit(ctx)
	return next(ctx)
}

func (a apqCommit) commit(ctx context.Context) {
	opCtx := graphql.GetOperationContext(ctx)
	if p, _ := opCtx.Stats.GetExtension(apqPendingExt).(*apqPending); p != nil && opCtx.Operation != nil {
		if _, ok := restclient.CredentialsFrom(ctx); ok {
			a.store.Add(ctx, p.key, p.query)
		}
	}
}
