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
// (gqlhttp/charge.go, an operation-context mutator after graph's): it
// refuses every operation with an estimate whose request is limited.
type refusingCharge struct{}

type limitedKey struct{}

var _ graphql.OperationContextMutator = refusingCharge{}

func (refusingCharge) ExtensionName() string                   { return "RefusingCharge" }
func (refusingCharge) Validate(graphql.ExecutableSchema) error { return nil }
func (refusingCharge) MutateOperationContext(ctx context.Context, op *graphql.OperationContext) *gqlerror.Error {
	if _, ok := admission.OperationEstimate(op); ok && ctx.Value(limitedKey{}) != nil {
		return limitError(errcode.RateLimited, "rate limited")
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
func apqPost(tb testing.TB, r *limitsRig, query, hash string, creds, limited bool) answer {
	tb.Helper()
	body := map[string]any{"extensions": map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": hash}}}
	if query != "" {
		body["query"] = query
	}
	b, _ := json.Marshal(body)
	req := httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader(string(b)))
	req.Header.Set("Content-Type", "application/json")
	if creds {
		req.Header.Set("x-api-key", r.biz.APIKey)
		req.Header.Set("x-api-secret", r.biz.APISecret)
	}
	if limited {
		req = req.WithContext(context.WithValue(req.Context(), limitedKey{}, true))
	}
	rec := httptest.NewRecorder()
	r.h.ServeHTTP(rec, req)
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
	store := apqstore.NewLocal(0, 0)
	r := newLimitsRig(t, ServerConfig{APQCache: store, MaxComplexity: 2, Limits: admission.QueryLimits{MaxDepth: 3},
		Extensions: []graphql.HandlerExtension{refusingCharge{}}})
	pay := r.sb.Payments(r.biz.APIKey)[0].ID
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
	const n = 300
	store := apqstore.NewLocal(0, 0)
	r := newLimitsRig(t, ServerConfig{APQCache: store, Extensions: []graphql.HandlerExtension{refusingCharge{}}})
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
	rb := &limitsRig{h: withCallerPair(plain), biz: r.biz}
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

// TestAPQExtensionMatchesGqlgen: apqExtension answers every shape of the
// persistedQuery member as gqlgen's extension.AutomaticPersistedQuery
// (v0.17.98) does: the same query run, the same error and code.
func TestAPQExtensionMatchesGqlgen(t *testing.T) {
	const q = "{ __typename }"
	h := apqHash(q)
	for _, tc := range []struct {
		name  string
		query string
		pq    any
	}{
		{"no member", "", nil},
		{"stored hash", "", map[string]any{"version": 1, "sha256Hash": h}},
		{"stored hash, json.Number", "", map[string]any{"version": json.Number("1"), "sha256Hash": h}},
		{"stored hash, float", "", map[string]any{"version": float64(1), "sha256Hash": h}},
		{"float truncated", "", map[string]any{"version": 1.5, "sha256Hash": h}},
		{"unknown hash", "", map[string]any{"version": 1, "sha256Hash": apqHash("x")}},
		{"null hash", "", map[string]any{"version": 1, "sha256Hash": nil}},
		{"no version", "", map[string]any{"sha256Hash": h}},
		{"version 2", "", map[string]any{"version": 2, "sha256Hash": h}},
		{"version a string", "", map[string]any{"version": "1", "sha256Hash": h}},
		{"version not an integer", "", map[string]any{"version": json.Number("1.0"), "sha256Hash": h}},
		{"hash a number", "", map[string]any{"version": 1, "sha256Hash": 5}},
		{"member a string", "", "abc"},
		{"extra members", "", map[string]any{"version": 1, "sha256Hash": h, "x": true}},
		{"registration", q, map[string]any{"version": 1, "sha256Hash": h}},
		{"registration, wrong hash", q, map[string]any{"version": 1, "sha256Hash": apqHash("y")}},
		{"registration, upper-case hash", q, map[string]any{"version": 1, "sha256Hash": strings.ToUpper(h)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := func(ext graphql.OperationParameterMutator) (string, string) {
				p := &graphql.RawParams{Query: tc.query, Extensions: map[string]any{}}
				if tc.pq != nil {
					p.Extensions["persistedQuery"] = tc.pq
				}
				ctx := graphql.WithOperationContext(context.Background(), &graphql.OperationContext{})
				if err := ext.MutateOperationParameters(ctx, p); err != nil {
					return "", fmt.Sprintf("%s %v", err.Message, err.Extensions)
				}
				return p.Query, ""
			}
			store := apqstore.NewLocal(0, 0)
			store.Add(context.Background(), h, q)
			wantQ, wantErr := run(extension.AutomaticPersistedQuery{Cache: store})
			gotQ, gotErr := run(apqExtension{store: store})
			if gotQ != wantQ || gotErr != wantErr {
				t.Errorf("got query %q, error %q; gqlgen's: %q, %q", gotQ, gotErr, wantQ, wantErr)
			}
		})
	}
}

// TestAPQRegistrationHashedOnce: a registration's hash is checked against
// the text's SHA-256 that trustedDocuments noted for the request, when it
// did, without hashing the text again (issue 25); else against its own.
func TestAPQRegistrationHashedOnce(t *testing.T) {
	const q = "{ __typename }"
	for _, tc := range []struct {
		name, noted, sent string
		wantErr           bool
	}{
		{"nothing noted, the right hash", "", apqHash(q), false},
		{"nothing noted, a wrong hash", "", apqHash("x"), true},
		{"the noted hash is the one compared", "cafe", "cafe", false},
		{"a hash other than the noted one", apqHash(q), apqHash("x"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			oc := &graphql.OperationContext{}
			if tc.noted != "" {
				oc.Stats.SetExtension(textHashExt, tc.noted)
			}
			p := &graphql.RawParams{Query: q, Extensions: map[string]any{
				"persistedQuery": map[string]any{"version": 1, "sha256Hash": tc.sent}}}
			err := apqExtension{store: apqstore.NewLocal(0, 0)}.MutateOperationParameters(graphql.WithOperationContext(context.Background(), oc), p)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want one: %v", err, tc.wantErr)
			}
		})
	}
}
