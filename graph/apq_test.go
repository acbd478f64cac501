package graph

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"paygraph/graph/admission"
	"paygraph/graph/errcode"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"paygraph/apqstore"
)

// refusingCharge stands for the edge's rate-limit charge
// (gqlhttp/ratelimit.go, an operation-context mutator after graph's): it
// refuses every operation with an estimate whose request is limited.
type refusingCharge struct{}

type limitedKey struct{}

var _ graphql.OperationContextMutator = refusingCharge{}

func (refusingCharge) ExtensionName() string                   { return "RefusingCharge" }
func (refusingCharge) Validate(graphql.ExecutableSchema) error { return nil }
func (refusingCharge) MutateOperationContext(ctx context.Context, op *graphql.OperationContext) *gqlerror.Error {
	if _, ok := admission.OperationEstimate(op); ok && ctx.Value(limitedKey{}) != nil {
		return admission.LimitError(errcode.RateLimited, "rate limited")
	}
	return nil
}

func apqHash(q string) string {
	s := sha256.Sum256([]byte(q))
	return hex.EncodeToString(s[:])
}

// apqPost sends query (none when "") with its persistedQuery hash: with
// the sandbox merchant's pair when creds, and charged to a refusing rate
// limit when limited.
func apqPost(tb testing.TB, r *Rig, query, hash string, creds, limited bool) answer {
	tb.Helper()
	body := map[string]any{"extensions": map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": hash}}}
	if query != "" {
		body["query"] = query
	}
	b, _ := json.Marshal(body)
	req := httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader(string(b)))
	req.Header.Set("Content-Type", "application/json")
	if creds {
		req.Header.Set("x-api-key", r.Biz.APIKey)
		req.Header.Set("x-api-secret", r.Biz.APISecret)
	}
	if limited {
		req = req.WithContext(context.WithValue(req.Context(), limitedKey{}, true))
	}
	rec := httptest.NewRecorder()
	r.Handler.ServeHTTP(rec, req)
	a := answer{status: rec.Code, body: rec.Body.Bytes()}
	if err := json.Unmarshal(a.body, &a); err != nil {
		tb.Fatalf("status %d, answer is not JSON: %.300s", a.status, a.body)
	}
	return a
}

// TestAPQRegistersOnlyAcceptedQueries: a query is registered under its
// hash only once it parsed, passed the limits, validated and was charged
// to a rate limit, for a request with credentials (apq.go); otherwise the
// next request by hash alone is answered PERSISTED_QUERY_NOT_FOUND.
func TestAPQRegistersOnlyAcceptedQueries(t *testing.T) {
	t.Parallel()
	store := apqstore.NewLocal(0, 0)
	r := NewRig(t, RigConfig{Server: ServerConfig{APQCache: store, MaxComplexity: 2, Limits: admission.QueryLimits{MaxDepth: 3},
		Extensions: []graphql.HandlerExtension{refusingCharge{}}}})
	pay := r.Sandbox.Payments(r.Biz.APIKey)[0].ID
	for _, c := range []struct {
		name    string
		query   string
		creds   bool
		limited bool
		code    string // of the registering request; "": answered
	}{
		{"not GraphQL", "not graphql " + strings.Repeat("x", 2000), true, false, "GRAPHQL_PARSE_FAILED"},
		{"fails validation", `{ noSuchField }`, true, false, "GRAPHQL_VALIDATION_FAILED"},
		{"unknown operation name", `query A { __typename } query B { __typename }`, true, false, "GRAPHQL_VALIDATION_FAILED"},
		{"over the depth limit", `{ checkoutSession(id: "x") { payment { customer { name } } } }`, true, false, errcode.DepthLimit},
		{"over the complexity limit", fmt.Sprintf(`{ a: payment(id: %q) { id } b: payment(id: %q) { id } c: payment(id: %q) { id } }`, pay, pay, pay), true, false, errcode.ComplexityLimit},
		{"rate limited", fmt.Sprintf(`{ payment(id: %q) { id } }`, pay), true, true, errcode.RateLimited},
		{"anonymous", `{ __typename anonymous: __typename }`, false, false, ""},
		{"valid with credentials", fmt.Sprintf(`{ payment(id: %q) { id amount { amount } } }`, pay), true, false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := apqHash(c.query)
			a := apqPost(t, r, c.query, h, c.creds, c.limited)
			if c.code != "" {
				a.wantRefused(t, c.code)
			} else {
				a.wantNoErrors(t)
			}
			_, stored := store.Get(context.Background(), h)
			again := apqPost(t, r, "", h, true, false)
			if c.name == "valid with credentials" {
				if !stored {
					t.Fatal("a valid query of a merchant was not registered")
				}
				again.wantNoErrors(t)
				if !strings.Contains(string(again.Data), pay) {
					t.Fatalf("by hash: %.300s", again.body)
				}
				return
			}
			if stored {
				t.Fatal("registered")
			}
			again.wantRefused(t, "PERSISTED_QUERY_NOT_FOUND")
		})
	}
}

// TestAPQJunkRegistrations prints what N anonymous and N credentialed
// junk registrations (32,000 bytes that are not GraphQL, with their
// correct hash) leave in the store: gqlgen's extension alone stored each
// before parsing it.
func TestAPQJunkRegistrations(t *testing.T) {
	t.Parallel()
	const n = 300
	store := apqstore.NewLocal(0, 0)
	r := NewRig(t, RigConfig{Server: ServerConfig{APQCache: store, Extensions: []graphql.HandlerExtension{refusingCharge{}}}})
	for _, creds := range []bool{false, true} {
		for i := range n {
			q := fmt.Sprintf("junk %d %s", i, strings.Repeat("x", 32000-12))
			apqPost(t, r, q, apqHash(q), creds, false).wantRefused(t, "GRAPHQL_PARSE_FAILED")
		}
	}
	// Before: gqlgen's extension in front of the store, as the server was.
	before := apqstore.NewLocal(1<<20, 1<<40)
	plain := handler.New(NewExecutableSchema(Config{Resolvers: &Resolver{}}))
	plain.AddTransport(transport.POST{})
	plain.Use(extension.AutomaticPersistedQuery{Cache: before})
	rb := &Rig{Handler: withCallerPair(plain), Biz: r.Biz}
	for i := range n {
		q := fmt.Sprintf("junk %d %s", i, strings.Repeat("x", 32000-12))
		apqPost(t, rb, q, apqHash(q), false, false)
	}
	t.Logf("junk registrations of 32,000 bytes that are not GraphQL: before (gqlgen's extension, %d anonymous): %d keys, %d bytes kept; now (%d anonymous, %d with credentials): %d keys, %d bytes kept",
		n, before.Len(), before.Bytes(), n, n, store.Len(), store.Bytes())
	if store.Len() != 0 || store.Bytes() != 0 {
		t.Fatalf("junk stored: %d keys, %d bytes", store.Len(), store.Bytes())
	}
}
