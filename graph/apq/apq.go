// Package apq serves automatic persisted queries with gqlgen's answers,
// but registers a query only once it has earned it: Extension notes a
// query sent with its hash, and Commit stores it once it passed every
// limit and was charged to its merchant (gqlgen's would store any text).
package apq

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

// pendingExt names the operation's pending registration in its Stats.
const pendingExt = "paygraph.apqPending"

// TextHashExt names, in the operation's Stats, the SHA-256 (hex) of the
// query text package trusted computed already.
const TextHashExt = "paygraph.textHash"

type pending struct{ key, query string }

// Extension runs the query stored under a hash sent alone and notes a
// query sent with its hash for Commit; it runs after package trusted and
// before the query limits.
type Extension struct{ Store graphql.Cache[string] }

var _ graphql.OperationParameterMutator = Extension{}

func (Extension) ExtensionName() string                   { return "AutomaticPersistedQuery" }
func (Extension) Validate(graphql.ExecutableSchema) error { return nil }

func (a Extension) MutateOperationParameters(ctx context.Context, p *graphql.RawParams) *gqlerror.Error {
	raw := p.Extensions["persistedQuery"]
	if raw == nil {
		return nil
	}
	hash, version, ok := params(raw)
	if !ok {
		return gqlerror.Errorf("invalid APQ extension data")
	}
	if version != 1 {
		return gqlerror.Errorf("unsupported APQ version")
	}
	if p.Query == "" {
		q, ok := a.Store.Get(ctx, hash)
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
	graphql.GetOperationContext(ctx).Stats.SetExtension(pendingExt, &pending{key: hash, query: p.Query})
	return nil
}

// sameHash reports whether hash is the SHA-256 (lower-case hex) of query.
func sameHash(ctx context.Context, query, hash string) bool {
	if h, ok := graphql.GetOperationContext(ctx).Stats.GetExtension(TextHashExt).(string); ok {
		return h == hash
	}
	sum := sha256.Sum256([]byte(query))
	var hexSum [2 * sha256.Size]byte
	hex.Encode(hexSum[:], sum[:])
	return string(hexSum[:]) == hash
}

// params reads persistedQuery's sha256Hash and version as gqlgen's
// mapstructure.Decode does (a float version truncated, nulls absent).
func params(raw any) (hash string, version int64, ok bool) {
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
		var err error
		if version, err = v.Int64(); err != nil {
			return "", 0, false
		}
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

// Commit stores the pending registration of an operation every mutator
// accepted (graph's tail calls it); a request without credentials, charged
// to no merchant, registers nothing.
type Commit struct{ Store graphql.Cache[string] }

// Commit stores ctx's operation's pending registration, if any.
func (a Commit) Commit(ctx context.Context) {
	opCtx := graphql.GetOperationContext(ctx)
	if p, _ := opCtx.Stats.GetExtension(pendingExt).(*pending); p != nil && opCtx.Operation != nil {
		if _, ok := restclient.CredentialsFrom(ctx); ok {
			a.Store.Add(ctx, p.key, p.query)
		}
	}
}
