package graph

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/transport"

	"paygraph/restclient"
)

// TestRootFastPathChargesAsGqlgen: the root fast path charges the
// response budget what gqlgen's resolvers charge for the same query
// (the payment's cost plan, and each address as its resolver does).
func TestRootFastPathChargesAsGqlgen(t *testing.T) {
	rest := newFastREST("Padma", "SUCCEEDED")
	charge := func(noFast bool, query string) (charged int, answered bool) {
		probe := &estimateProbe{}
		srv, _ := newServer(ServerConfig{noFastPath: noFast, Extensions: []graphql.HandlerExtension{probe}})
		srv.AddTransport(transport.POST{})
		h := LoadersMiddleware(rest, nil)(srv)
		body, _ := json.Marshal(map[string]any{"query": query})
		req := httptest.NewRequest(http.MethodPost, "/graphql", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req = req.WithContext(restclient.WithCredentials(req.Context(), restclient.Credentials{APIKey: "ak_test_x", APISecret: "sk_test_y"}))
		before := rootAnswered.Load()
		h.ServeHTTP(httptest.NewRecorder(), req)
		return probe.charged, rootAnswered.Load() > before
	}
	for _, q := range []string{
		`{ payment(id: "pay_a") { id status amount { amount paisa currency } customer { name email address } createdAt } }`,
		`{ a: payment(id: "pay_a") { id customer { x: address address } } b: payment(id: "pay_b") { customer { address } amount { amount } } }`,
		`{ payment(id: "pay_c") { ...P } } fragment P on Payment { id customer { name city } }`,
	} {
		fast, answered := charge(false, q)
		slow, _ := charge(true, q)
		if !answered || fast != slow || fast == 0 {
			t.Errorf("%s: charged %d by the root fast path (answered %v), %d by gqlgen", q, fast, answered, slow)
		}
	}
}
