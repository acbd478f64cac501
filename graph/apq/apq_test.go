package apq

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/extension"

	"paygraph/apqstore"
)

func apqHash(q string) string {
	s := sha256.Sum256([]byte(q))
	return hex.EncodeToString(s[:])
}

// TestAPQExtensionMatchesGqlgen: Extension answers every shape of the
// persistedQuery member as gqlgen's extension.AutomaticPersistedQuery
// (v0.17.98) does: the same query run, the same error and code.
func TestAPQExtensionMatchesGqlgen(t *testing.T) {
	t.Parallel()
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
			gotQ, gotErr := run(Extension{Store: store})
			if gotQ != wantQ || gotErr != wantErr {
				t.Errorf("got query %q, error %q; gqlgen's: %q, %q", gotQ, gotErr, wantQ, wantErr)
			}
		})
	}
}

// TestAPQRegistrationHashedOnce: a registration's hash is checked against
// the text's SHA-256 that package trusted noted for the request, when it
// did, without hashing the text again; else against its own.
func TestAPQRegistrationHashedOnce(t *testing.T) {
	t.Parallel()
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
				oc.Stats.SetExtension(TextHashExt, tc.noted)
			}
			p := &graphql.RawParams{Query: q, Extensions: map[string]any{
				"persistedQuery": map[string]any{"version": 1, "sha256Hash": tc.sent}}}
			err := Extension{Store: apqstore.NewLocal(0, 0)}.MutateOperationParameters(graphql.WithOperationContext(context.Background(), oc), p)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want one: %v", err, tc.wantErr)
			}
		})
	}
}
