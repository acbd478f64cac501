package gateway_test

// POST and GET /graphql skip chi's routing (gateway.go, scopedRouter):
// they must be answered exactly as chi answers them.

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"paygraph/gateway"
)

func TestGraphQLBypassesChi(t *testing.T) {
	t.Parallel()
	f := newBenchFixture(t)
	gw := benchStubGateway(t, f.stub)
	chiRouted := gateway.ChiRouted(gw.(*gateway.Gateway))
	single := f.request(benchSingleQuery, map[string]any{"id": f.paymentID})
	// The stub's merchant is accepted first (one REST call), from an
	// address of its own: until then its requests are anonymous, and its
	// first would spend one of the anonymous budget of the address the
	// cases share, which their 10 anonymous requests fill.
	accept := httptest.NewRequest(http.MethodPost, "/graphql", bytes.NewReader(single.body))
	accept.Header = single.header.Clone()
	accept.RemoteAddr = "198.51.100.1:1234"
	gw.ServeHTTP(httptest.NewRecorder(), accept)
	for _, tc := range []struct {
		name, method, target, body string
		header                     http.Header
	}{
		{"POST a payment", http.MethodPost, "/graphql", string(single.body), single.header},
		{"POST without credentials", http.MethodPost, "/graphql", `{"query":"{ __typename }"}`, http.Header{"Content-Type": {"application/json"}}},
		{"POST gzip accepted", http.MethodPost, "/graphql", string(single.body),
			http.Header{"Content-Type": {"application/json"}, "Accept-Encoding": {"gzip"}, "X-Api-Key": single.header["X-Api-Key"], "X-Api-Secret": single.header["X-Api-Secret"]}},
		{"GET a query", http.MethodGet, "/graphql?query=%7B__typename%7D", "", http.Header{}},
		{"GET without a query", http.MethodGet, "/graphql", "", http.Header{}},
		{"POST not JSON", http.MethodPost, "/graphql", `{}`, http.Header{"Content-Type": {"text/plain"}}},
		{"POST from a foreign origin", http.MethodPost, "/graphql", `{"query":"{ __typename }"}`,
			http.Header{"Content-Type": {"application/json"}, "Origin": {"https://evil.example"}}},
		{"POST a key sent twice", http.MethodPost, "/graphql", `{"query":"{ __typename }"}`,
			http.Header{"Content-Type": {"application/json"}, "X-Api-Key": {"a", "b"}, "X-Api-Secret": {"s"}}},
		{"POST a bad token", http.MethodPost, "/graphql", `{"query":"{ __typename }"}`,
			http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer nope"}}},
		{"POST an escaped path (chi's 404)", http.MethodPost, "/graph%71l", `{"query":"{ __typename }"}`, http.Header{"Content-Type": {"application/json"}}},
		{"POST a trailing slash (chi's 404)", http.MethodPost, "/graphql/", `{"query":"{ __typename }"}`, http.Header{"Content-Type": {"application/json"}}},
		{"PUT (routed by chi both ways)", http.MethodPut, "/graphql", `{}`, http.Header{"Content-Type": {"application/json"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			serve := func(h http.Handler) *httptest.ResponseRecorder {
				req := httptest.NewRequest(tc.method, tc.target, strings.NewReader(tc.body))
				req.Header = tc.header.Clone()
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				return rec
			}
			got, want := serve(gw), serve(chiRouted)
			if got.Code != want.Code {
				t.Errorf("status %d, chi's %d", got.Code, want.Code)
			}
			if !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) {
				t.Errorf("body\n%s\nchi's\n%s", got.Body, want.Body)
			}
			gh, wh := got.Header().Clone(), want.Header().Clone()
			for _, h := range []http.Header{gh, wh} {
				if len(h["X-Request-Id"]) != 1 {
					t.Errorf("X-Request-Id %q", h["X-Request-Id"])
				}
				delete(h, "X-Request-Id") // a new one each time
			}
			for k, v := range wh {
				if !slices.Equal(gh[k], v) {
					t.Errorf("%s: %q, chi's %q", k, gh[k], v)
				}
			}
			for k, v := range gh {
				if _, ok := wh[k]; !ok {
					t.Errorf("%s: %q, chi's none", k, v)
				}
			}
		})
	}
}
