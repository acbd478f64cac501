// Package graph is the GraphQL layer: the schema's resolvers, the
// per-request batching loaders, Relay cursors and the mapping of REST
// failures onto the contract's error codes, plus gqlgen's generated
// executor (generated.go, model/models_gen.go: never edited by hand).
package graph

//go:generate go run ./gen

import (
	"context"
	"net/http"
	"paygraph/graph/errcode"
	"paygraph/graph/live"
	"sync"

	"paygraph/graph/admission"
	"paygraph/graph/customerdata"
	"paygraph/graph/loaders"
	"paygraph/graph/relay"
	"paygraph/restclient"
)

// Resolver is the root of the resolvers. It holds nothing of a caller's:
// a request reads through its own loaders (LoadersMiddleware).
type Resolver struct {
	// Cursors signs and checks pagination cursors; nil: a random key made
	// once per process (cursors then work on this process only).
	Cursors    *relay.Keys
	Live       live.Config // serves the Subscription fields; zero: refused
	noFastPath bool        // the executor's fast path (fast.go) off, for tests
}

var processCursorKeys = sync.OnceValue(relay.RandomKeys)

// cursorSigner returns the signer of the caller's cursors (valid for one
// credential pair), or an UNAUTHENTICATED error without one.
func (r *Resolver) cursorSigner(ctx context.Context) (*relay.Signer, error) {
	creds, ok := restclient.CredentialsFrom(ctx)
	if !ok {
		// What the REST client answers without a call.
		return nil, &restclient.Error{Kind: restclient.KindUnauthorized, Endpoint: restclient.EndpointListPayments,
			Message: "missing x-api-key or x-api-secret header"}
	}
	keys := r.Cursors
	if keys == nil {
		keys = processCursorKeys()
	}
	return keys.For(creds.APIKey, creds.APISecret), nil
}

// REST is the REST API the resolvers and subscriptions read.
type REST = loaders.REST

// LoadersMiddleware gives each HTTP request fresh loaders over rest, every
// record masked to the caller's customer-data level; limits may be nil (no
// batch window, no batch metric). It runs in front of NewServer's server.
func LoadersMiddleware(rest REST, limits *loaders.FetchLimits) func(http.Handler) http.Handler {
	return loaders.Middleware(newMaskingREST(rest), limits)
}

// newMaskingREST is rest with every record masked to the level of the
// context its call is made with.
func newMaskingREST(rest REST) *customerdata.Masking {
	return &customerdata.Masking{REST: rest, Batch: loaders.Batches(rest), Level: customerDataOf}
}

// validID reports whether id is a valid id with prefix and more.
func validID(id, prefix string) bool {
	return admission.ValidID(id) && len(id) > len(prefix) && id[:len(prefix)] == prefix
}

func checkID(what, id, prefix string) error {
	switch {
	case validID(id, prefix):
		return nil
	case prefix == "":
		return errcode.Inputf("%s %q is not a valid id: expected letters, digits, '_' or '-'", what, id)
	}
	return errcode.Inputf("%s %q is not a valid id: expected %s followed by letters, digits, '_' or '-'", what, id, prefix)
}
