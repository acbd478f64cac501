package graph

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"paygraph/internal/opscope"
	"paygraph/trusteddocs"
)

// Trusted documents (package trusteddocs) are applied by a gqlgen
// operation-parameter mutator registered before the APQ extension and the
// query limits: it sees the request as sent (query text, APQ hash,
// documentId), so that a listed hash or id runs the manifest's text (APQ
// never registers it) and, in enforce mode, anything else is refused
// before it is parsed.
//
// documentId (the GraphQL-over-HTTP persisted documents proposal) is a
// member of the request beside query, not an extension, and gqlgen's
// RawParams has no field for it: the transports put it in the request's
// context (WithDocumentID) and the mutator reads it from there.

type documentIDKey struct{}

// WithDocumentID returns a context carrying the request's documentId
// (POST body member or GET query parameter); "" carries nothing.
func WithDocumentID(ctx context.Context, id string) context.Context {
	if id == "" {
		return ctx
	}
	return opscope.WithValue(ctx, documentIDKey{}, id)
}

// DocumentIDFrom is the request's documentId, or "".
func DocumentIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(documentIDKey{}).(string)
	return id
}

// trustedDocuments is the gqlgen extension; store nil: no manifest.
type trustedDocuments struct {
	store  *trusteddocs.Store
	report func(context.Context, trusteddocs.Decision)
}

var (
	_ graphql.HandlerExtension          = trustedDocuments{}
	_ graphql.OperationParameterMutator = trustedDocuments{}
)

func (trustedDocuments) ExtensionName() string                   { return "TrustedDocuments" }
func (trustedDocuments) Validate(graphql.ExecutableSchema) error { return nil }

func (t trustedDocuments) MutateOperationParameters(ctx context.Context, p *graphql.RawParams) *gqlerror.Error {
	if t.store == nil || t.store.Mode() == trusteddocs.Off {
		// The documentId only when there is no query (a look-up of a
		// key a request does not hold walks its whole context).
		if p.Query == "" && DocumentIDFrom(ctx) != "" {
			// Rather than a parse error on an empty query.
			return limitError(trusteddocs.CodeNotFound, "documentId is not served here: this gateway has no trusted documents; send the query text")
		}
		return nil
	}
	req := trusteddocs.Request{Query: p.Query, DocumentID: DocumentIDFrom(ctx)}
	if pq, ok := p.Extensions["persistedQuery"].(map[string]any); ok {
		req.SHA256Hash, _ = pq["sha256Hash"].(string)
	}
	d := t.store.Decide(req)
	if t.report != nil {
		t.report(ctx, d)
	}
	if d.Action == trusteddocs.ServeSent && req.Query != "" && req.SHA256Hash != "" && d.Hash != "" {
		// An APQ registration: d.Hash is the SHA-256 of the text sent
		// (Decision.Hash), which apqExtension checks the sent hash
		// against without hashing the text again.
		graphql.GetOperationContext(ctx).Stats.SetExtension(textHashExt, d.Hash)
	}
	switch d.Action {
	case trusteddocs.ServeListed:
		p.Query = d.Query
		delete(p.Extensions, "persistedQuery") // answered here: APQ must not register it
	case trusteddocs.Refuse:
		return limitError(d.Code, "%s", d.Message)
	}
	return nil
}
