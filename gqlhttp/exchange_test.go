package gqlhttp_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"paygraph/graph/errcode"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"paygraph/gqlhttp"
	"paygraph/graph"
)

// exchangeAnswer is what a test compares of one answer.
type exchangeAnswer struct {
	Status      int
	ContentType string
	Allow       string
	Body        map[string]any
}

// exchangeEdge is the server with the edge's transports, Methods in front
// (as the gateway composes them) and no REST behind.
func exchangeEdge() http.Handler {
	srv := graph.NewServer(graph.ServerConfig{})
	gqlhttp.AddTransports(srv, 0)
	return gqlhttp.Methods(graph.LoadersMiddleware(noREST{}, nil)(srv))
}

// send sends one GraphQL request (query, variables) over method with
// accept, and returns the answer.
func send(t *testing.T, h http.Handler, method, accept, query string, variables map[string]any) exchangeAnswer {
	t.Helper()
	var req *http.Request
	switch method {
	case http.MethodPost:
		body, _ := json.Marshal(map[string]any{"query": query, "variables": variables})
		req = httptest.NewRequest(method, "/graphql", strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
	default:
		v := url.Values{"query": {query}}
		if variables != nil {
			b, _ := json.Marshal(variables)
			v.Set("variables", string(b))
		}
		req = httptest.NewRequest(method, "/graphql?"+v.Encode(), nil)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	a := exchangeAnswer{Status: rec.Code, ContentType: rec.Header().Get("Content-Type"), Allow: rec.Header().Get("Allow")}
	if err := json.Unmarshal(rec.Body.Bytes(), &a.Body); err != nil {
		t.Fatalf("body is not JSON: %v: %s", err, rec.Body)
	}
	return a
}

const (
	ctJSON = "application/json; charset=utf-8"
	ctGR   = "application/graphql-response+json; charset=utf-8"
	gr     = "application/graphql-response+json"
)

// TestExchangeFollowsGraphQLOverHTTP: the media type follows Accept, and a
// request error (parse, validation, variable coercion, no query) answers
// 200 under application/json and 400 under
// application/graphql-response+json, without a "data" entry; GET answers
// exactly as POST (https://graphql.github.io/graphql-over-http/draft/).
func TestExchangeFollowsGraphQLOverHTTP(t *testing.T) {
	t.Parallel()
	parseErr := map[string]any{"errors": []any{map[string]any{
		"message": "Expected Name, found <EOF>", "locations": []any{map[string]any{"line": 1.0, "column": 2.0}},
		"extensions": map[string]any{"code": "GRAPHQL_PARSE_FAILED"}}}}
	validationErr := map[string]any{"errors": []any{map[string]any{
		"message": `Cannot query field "nosuchfield" on type "Query".`, "locations": []any{map[string]any{"line": 1.0, "column": 3.0}},
		"extensions": map[string]any{"code": "GRAPHQL_VALIDATION_FAILED"}}}}
	variableErr := map[string]any{"errors": []any{map[string]any{
		"message":    `Variable "$id" got an invalid value: must be defined`,
		"locations":  []any{map[string]any{"line": 1.0, "column": 7.0}},
		"extensions": map[string]any{"code": errcode.BadUserInput}}}}
	ok := map[string]any{"data": map[string]any{"__typename": "Query"}}
	tests := []struct {
		name, accept, query string
		variables           map[string]any
		want                exchangeAnswer
	}{
		{"no Accept: application/json", "", "{ __typename }", nil, exchangeAnswer{200, ctJSON, "", ok}},
		{"*/*: application/json", "*/*", "{ __typename }", nil, exchangeAnswer{200, ctJSON, "", ok}},
		{"graphql-response+json", gr, "{ __typename }", nil, exchangeAnswer{200, ctGR, "", ok}},
		{"Apollo Client 4's Accept", gr + ",application/json;q=0.9", "{ __typename }", nil, exchangeAnswer{200, ctGR, "", ok}},
		{"application/json preferred by q", gr + ";q=0.5, application/json", "{ __typename }", nil, exchangeAnswer{200, ctJSON, "", ok}},
		{"parse error, json", "application/json", "{", nil, exchangeAnswer{200, ctJSON, "", parseErr}},
		{"parse error, graphql-response+json", gr, "{", nil, exchangeAnswer{400, ctGR, "", parseErr}},
		{"validation error, json", "", "{ nosuchfield }", nil, exchangeAnswer{200, ctJSON, "", validationErr}},
		{"validation error, graphql-response+json", gr, "{ nosuchfield }", nil, exchangeAnswer{400, ctGR, "", validationErr}},
		{"variable coercion, json", "", "query($id: ID!) { payment(id: $id) { id } }", nil, exchangeAnswer{200, ctJSON, "", variableErr}},
		{"variable coercion, graphql-response+json", gr, "query($id: ID!) { payment(id: $id) { id } }", map[string]any{}, exchangeAnswer{400, ctGR, "", variableErr}},
	}
	h := exchangeEdge()
	for _, tc := range tests {
		for _, method := range []string{http.MethodPost, http.MethodGet} {
			t.Run(method+" "+tc.name, func(t *testing.T) {
				got := send(t, h, method, tc.accept, tc.query, tc.variables)
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("answer (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// TestExchangeRequestWithoutQuery: a POST body with no query is not a
// GraphQL request: 400, in the negotiated media type, without "data".
func TestExchangeRequestWithoutQuery(t *testing.T) {
	t.Parallel()
	h := exchangeEdge()
	for _, accept := range []string{"", gr} {
		t.Run("Accept "+accept, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader(`{"qeury":"{ __typename }"}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", accept)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusBadRequest {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			if want := map[string]string{"": ctJSON, gr: ctGR}[accept]; rec.Header().Get("Content-Type") != want {
				t.Errorf("Content-Type %q, want %q", rec.Header().Get("Content-Type"), want)
			}
			if strings.Contains(rec.Body.String(), `"data"`) {
				t.Errorf("a data entry: %s", rec.Body)
			}
		})
	}
}

// TestGETRefusesMutations: a mutation over GET is 405 with Allow: POST,
// whatever the schema has, and runs nothing.
func TestGETRefusesMutations(t *testing.T) {
	t.Parallel()
	h := exchangeEdge()
	for _, query := range []string{"mutation { x }", "mutation M { __typename }"} {
		t.Run(query, func(t *testing.T) {
			got := send(t, h, http.MethodGet, "", query, nil)
			want := exchangeAnswer{http.StatusMethodNotAllowed, ctJSON, "POST", map[string]any{"errors": []any{map[string]any{
				"message": "GET runs queries only: send mutations with POST", "extensions": map[string]any{"code": errcode.BadUserInput}}}}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
		})
	}
}
