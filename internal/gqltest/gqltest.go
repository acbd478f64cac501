// Package gqltest is the one GraphQL client of the project's tests: it
// sends operations to a gateway (in-process or run by e2e), decodes the
// GraphQL response and checks its error codes, so that every suite speaks
// to the gateway, and a failure reads, the same way.
package gqltest

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// Client talks to one gateway.
type Client struct {
	URL       string       // the gateway's base URL, such as http://127.0.0.1:8080
	HTTP      *http.Client // sends the requests; nil: http.DefaultClient
	Forbidden []string     // strings no response body may contain (the merchants' secrets)
}

// Error is one entry of a GraphQL response's errors.
type Error struct {
	Message    string         `json:"message"`
	Path       []any          `json:"path"`
	Locations  []Location     `json:"locations"`
	Extensions map[string]any `json:"extensions"`
}

// Location is a position in the query text.
type Location struct {
	Line   int `json:"line"`
	Column int `json:"column"`
}

// Code is the error's extensions.code, or "".
func (e Error) Code() string {
	c, _ := e.Extensions["code"].(string)
	return c
}

// Response is a GraphQL response with its HTTP status and headers.
type Response struct {
	Status int
	Header http.Header
	Raw    []byte          // the body as received
	Data   json.RawMessage `json:"data"`
	Errors []Error         `json:"errors"`
}

// Headers returns the two credential headers of a merchant.
func Headers(apiKey, apiSecret string) http.Header {
	return http.Header{"X-Api-Key": {apiKey}, "X-Api-Secret": {apiSecret}}
}

// Post sends query (and vars) as a JSON POST to /graphql.
func (c *Client) Post(t testing.TB, h http.Header, query string, vars map[string]any) *Response {
	t.Helper()
	return c.PostBody(t, h, map[string]any{"query": query, "variables": vars})
}

// PostBody sends body (any JSON value, marshalled) as a POST to /graphql.
func (c *Client) PostBody(t testing.TB, h http.Header, body any) *Response {
	t.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return c.Send(t, http.MethodPost, "/graphql", h, raw)
}

// Get sends query as GET /graphql?query=... plus params (variables, operationName, extensions).
func (c *Client) Get(t testing.TB, h http.Header, query string, params url.Values) *Response {
	t.Helper()
	q := url.Values{}
	maps.Copy(q, params)
	if query != "" {
		q.Set("query", query)
	}
	return c.Send(t, http.MethodGet, "/graphql?"+q.Encode(), h, nil)
}

// Send makes one request to path and decodes the answer as a GraphQL
// response; a body that is not one fails the test.
func (c *Client) Send(t testing.TB, method, path string, h http.Header, body []byte) *Response {
	t.Helper()
	r := c.Do(t, method, path, h, body)
	if err := json.Unmarshal(r.Raw, r); err != nil {
		t.Fatalf("%s %s: status %d, body %q is not a GraphQL response", method, path, r.Status, r.Raw)
	}
	return r
}

// Do makes one request to path and returns the answer undecoded (for
// bodies that need not be GraphQL responses).
func (c *Client) Do(t testing.TB, method, path string, h http.Header, body []byte) *Response {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, c.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if h != nil {
		req.Header = h.Clone()
	}
	if body != nil && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := cmp.Or(c.HTTP, http.DefaultClient).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	for _, f := range c.Forbidden {
		if f != "" && strings.Contains(string(raw), f) {
			t.Fatalf("%s %s: the response contains a secret: %s", method, path, raw)
		}
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Raw: raw}
}

// Decode unmarshals the response's data into into.
func (r *Response) Decode(t testing.TB, into any) {
	t.Helper()
	if err := json.Unmarshal(r.Data, into); err != nil {
		t.Fatalf("decoding data %s: %v", r.Data, err)
	}
}

// Codes lists the errors' codes in order.
func (r *Response) Codes() []string {
	out := make([]string, 0, len(r.Errors))
	for _, e := range r.Errors {
		out = append(out, e.Code())
	}
	return out
}

// WantNoErrors fails the test when the response has errors.
func (r *Response) WantNoErrors(t testing.TB) *Response {
	t.Helper()
	if len(r.Errors) > 0 {
		t.Fatalf("unexpected errors: %+v (status %d)", r.Errors, r.Status)
	}
	return r
}

// WantCode fails the test unless an error has code, and returns it.
func (r *Response) WantCode(t testing.TB, code string) Error {
	t.Helper()
	for _, e := range r.Errors {
		if e.Code() == code {
			return e
		}
	}
	t.Fatalf("want an error with code %s, got %+v (status %d, data %s)", code, r.Errors, r.Status, r.Data)
	return Error{}
}

// IntrospectionQuery is graphql-js 16's getIntrospectionQuery(), which
// GraphiQL and code generators send: a large answer for no REST call.
const IntrospectionQuery = `query IntrospectionQuery { __schema { queryType { name } mutationType { name } subscriptionType { name }
  types { ...FullType } directives { name description locations args { ...InputValue } } } }
fragment FullType on __Type { kind name description fields(includeDeprecated: true) { name description args { ...InputValue }
  type { ...TypeRef } isDeprecated deprecationReason } inputFields { ...InputValue } interfaces { ...TypeRef }
  enumValues(includeDeprecated: true) { name description isDeprecated deprecationReason } possibleTypes { ...TypeRef } }
fragment InputValue on __InputValue { name description type { ...TypeRef } defaultValue }
fragment TypeRef on __Type { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name
  ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name } } } } } } } } } }`

// EveryPaymentField selects every field of a payment, the address join
// included.
const EveryPaymentField = `id status amount { amount paisa currency } transactionId paymentMethod
	customer { name email phone address city } createdAt updatedAt`

// NodesQuery is n aliases of nodes(ids: $ids) { id }.
func NodesQuery(n int) string {
	var b strings.Builder
	b.WriteString("query($ids: [ID!]!) {")
	for i := range n {
		fmt.Fprintf(&b, " n%d: nodes(ids: $ids) { id }", i)
	}
	b.WriteString("}")
	return b.String()
}

// HeaderTransport sends its headers on every request through
// http.DefaultTransport (credentials for a client such as the MCP SDK's).
type HeaderTransport http.Header

func (h HeaderTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header[k] = v
	}
	return http.DefaultTransport.RoundTrip(r)
}
