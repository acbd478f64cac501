// Package trusted applies package trusteddocs' manifest to each request as
// sent, before APQ and the query limits: a listed hash or id runs the
// manifest's text, and in enforce mode anything else is refused unparsed.
package trusted

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	gqlerrcode "github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"paygraph/graph/apq"
	"paygraph/internal/opscope"
	"paygraph/trusteddocs"
)

type documentIDKey struct{}

// WithDocumentID returns a context carrying the request's documentId,
// which gqlgen's RawParams lacks; "" carries nothing.
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

// Documents is the gqlgen extension; Store nil: no manifest. Report, if set, hears each decision.
type Documents struct {
	Store  *trusteddocs.Store
	Report func(context.Context, trusteddocs.Decision)
}

var _ graphql.OperationParameterMutator = Documents{}

func (Documents) ExtensionName() string                   { return "TrustedDocuments" }
func (Documents) Validate(graphql.ExecutableSchema) error { return nil }

func (t Documents) MutateOperationParameters(ctx context.Context, p *graphql.RawParams) *gqlerror.Error {
	if t.Store == nil || t.Store.Mode() == trusteddocs.Off {
		// Only without a query: a missing key's look-up walks the context.
		if p.Query == "" && DocumentIDFrom(ctx) != "" {
			return refusal(trusteddocs.CodeNotFound, "documentId is not served here: this gateway has no trusted documents; send the query text")
		}
		return nil
	}
	req := trusteddocs.Request{Query: p.Query, DocumentID: DocumentIDFrom(ctx)}
	if pq, ok := p.Extensions["persistedQuery"].(map[string]any); ok {
		req.SHA256Hash, _ = pq["sha256Hash"].(string)
	}
	d := t.Store.Decide(req)
	if t.Report != nil {
		t.Report(ctx, d)
	}
	if d.Action == trusteddocs.ServeSent && req.Query != "" && req.SHA256Hash != "" && d.Hash != "" {
		// An APQ registration: d.Hash is the SHA-256 of the text sent.
		graphql.GetOperationContext(ctx).Stats.SetExtension(apq.TextHashExt, d.Hash)
	}
	switch d.Action {
	case trusteddocs.ServeListed:
		p.Query = d.Query
		delete(p.Extensions, "persistedQuery") // answered here: APQ must not register it
	case trusteddocs.Refuse:
		return refusal(d.Code, d.Message)
	}
	return nil
}

func refusal(code, msg string) *gqlerror.Error {
	err := gqlerror.Errorf("%s", msg)
	gqlerrcode.Set(err, code)
	return err
}
