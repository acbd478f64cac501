package graph

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"paygraph/graph/loaders"
	"paygraph/restclient"
)

// TestFastAnswerIsCompactData: what IsFastAnswer vouches for to the edge
// (gqlhttp writes it with appendHTMLSafe, which drops nothing between
// tokens): the data the root fast paths answered is compact JSON, and it
// is the response's data, byte for byte, before json.Marshal's HTML
// escapes. The texts hold '<', '>', '&', U+2028, quotes and control
// characters; a query the fast paths leave to gqlgen vouches for nothing.
func TestFastAnswerIsCompactData(t *testing.T) {
	t.Parallel()
	rest := newFastREST("N\"a<m>e & \u2028 \u2029 x", "weird <status>")
	srv := NewRig(t, RigConfig{NoLoaders: true, Server: ServerConfig{MaxResponseBytes: -1}}).Handler
	const sel = `{ id status amount { amount paisa currency } customer { name email city } createdAt }`
	for _, tc := range []struct {
		name, query string
		wantFast    bool
	}{
		{"one payment", `{ payment(id: "pay_b") ` + sel + ` }`, true},
		{"aliases", `{ a: payment(id: "pay_a") { id } b: payment(id: "pay_b") ` + sel + ` c: payment(id: "pay_c") ` + sel + ` }`, true},
		{"a list", `{ payments(first: 3) { nodes ` + sel + ` pageInfo { hasNextPage endCursor } } }`, true},
		{"a list's edges", `{ payments(first: 3) { edges { cursor node ` + sel + ` } } }`, true},
		{"not found: gqlgen's", `{ a: payment(id: "pay_a") { id } b: payment(id: "pay_zz") { id } }`, false},
		{"another root field: gqlgen's", `{ payment(id: "pay_a") { id } payments { nodes { id } } }`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLoaders(rest, nil)
			body, _ := json.Marshal(map[string]any{"query": tc.query})
			req := httptest.NewRequest(http.MethodPost, "/graphql", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(restclient.HeaderAPIKey, "ak_test_x")
			req.Header.Set(restclient.HeaderAPISecret, "sk_test_y")
			ctx := restclient.WithCredentials(loaders.With(req.Context(), l), restclient.Credentials{APIKey: "ak_test_x", APISecret: "sk_test_y"})
			rec := httptest.NewRecorder()
			srv.ServeHTTP(rec, req.WithContext(ctx))
			data := l.FastAnswer
			if got := IsFastAnswer(ctx, data); got != tc.wantFast {
				t.Fatalf("IsFastAnswer: %v, want %v (answer %s)", got, tc.wantFast, rec.Body)
			}
			if !tc.wantFast {
				return
			}
			if IsFastAnswer(ctx, bytes.Clone(data)) || IsFastAnswer(ctx, data[:len(data)-1]) {
				t.Error("IsFastAnswer vouches for data that is not the fast path's")
			}
			var compact bytes.Buffer
			if err := json.Compact(&compact, data); err != nil || !bytes.Equal(compact.Bytes(), data) {
				t.Fatalf("the fast path's data is not compact JSON (%v):\n%s", err, data)
			}
			escaped, err := json.Marshal(json.RawMessage(data))
			if err != nil {
				t.Fatal(err)
			}
			if want := `{"data":` + string(escaped) + `}`; strings.TrimSpace(rec.Body.String()) != want {
				t.Errorf("answer\n%s\nwant the fast path's data\n%s", rec.Body, want)
			}
			if !bytes.ContainsAny(data, "<&") {
				t.Errorf("the data holds no character to escape: the test would not see a wrong escape\n%s", data)
			}
		})
	}
}
