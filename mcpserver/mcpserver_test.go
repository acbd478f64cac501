package mcpserver_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"

	"paygraph/internal/gqltest"
	"paygraph/mcpserver"
	"paygraph/sessiontoken"
	"paygraph/trusteddocs"
)

var schema = gqlparser.MustLoadSchema(&ast.Source{Name: "test.graphqls", Input: `
scalar Decimal
enum PaymentStatus { PENDING FAILED }
type Money { amount: Decimal! currency: String! }
type Customer { name: String email: String phone: String address: String city: String }
type Payment { id: ID! status: PaymentStatus! amount: Money! transactionId: String paymentMethod: String
  customer: Customer! createdAt: String! updatedAt: String! }
type PageInfo { hasNextPage: Boolean! endCursor: String }
type PaymentConnection { nodes: [Payment!]! pageInfo: PageInfo! }
type MetadataEntry { key: String! value: String! }
type PaymentLink { id: ID! url: String! slug: String! title: String! description: String amount: Money!
  isReusable: Boolean! isActive: Boolean! currentUses: Int! maxUses: Int expiresAt: String createdAt: String! updatedAt: String! }
type CheckoutSession { sessionId: String! reference: String! paymentId: String! status: String! paymentStatus: String!
  amount: Money! subtotal: Money! customer: Customer! transactionId: String paymentMethod: String
  metadata: [MetadataEntry!]! createdAt: String! updatedAt: String! }
type Query {
  payments(first: Int = 20, after: String, status: PaymentStatus): PaymentConnection!
  payment(id: ID!): Payment
  paymentLink(id: ID!): PaymentLink
  checkoutSession(id: String!): CheckoutSession
}`})

// graphqlFake records each request it serves and answers answer.
type graphqlFake struct {
	mu     sync.Mutex
	seen   []*http.Request
	bodies []string
	answer func(w http.ResponseWriter, r *http.Request)
}

func (f *graphqlFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.seen, f.bodies = append(f.seen, r), append(f.bodies, string(b))
	f.mu.Unlock()
	f.answer(w, r)
}

func answering(status int, header http.Header, body string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		for k, v := range header {
			w.Header()[k] = v
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

const okToken = "good-token"

func verify(token string) (sessiontoken.Claims, error) {
	switch token {
	case okToken:
		return sessiontoken.Claims{Scope: sessiontoken.AllReads(), ExpiresAt: time.Now().Add(time.Hour)}, nil
	case "expired":
		return sessiontoken.Claims{}, sessiontoken.ErrExpired
	}
	return sessiontoken.Claims{}, errors.New("bad " + token) // never echoed
}

func serve(t *testing.T, f *graphqlFake) *httptest.Server { return serveWith(t, f, nil) }

func serveAdmitting(t *testing.T, f *graphqlFake, admit func(http.Handler) http.Handler) *httptest.Server {
	return serveWith(t, f, func(c *mcpserver.Config) { c.Admit = admit })
}

func serveWith(t *testing.T, f *graphqlFake, set func(*mcpserver.Config)) *httptest.Server {
	t.Helper()
	cfg := mcpserver.Config{
		GraphQL: f, GraphQLPath: "/graphql", Schema: schema, Verify: verify,
		KeyHeader: "x-api-key", SecretHeader: "x-api-secret",
	}
	if set != nil {
		set(&cfg)
	}
	endpoint, metadata := mcpserver.New(cfg)
	mux := http.NewServeMux()
	mux.Handle(mcpserver.Path, endpoint)
	mux.Handle(mcpserver.MetadataPath, metadata)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func connect(t *testing.T, srv *httptest.Server, h http.Header) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	s, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: srv.URL + mcpserver.Path,
		HTTPClient: &http.Client{Transport: gqltest.HeaderTransport(h)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func text(t *testing.T, r *mcp.CallToolResult) string {
	t.Helper()
	if len(r.Content) != 1 {
		t.Fatalf("content %v", r.Content)
	}
	return r.Content[0].(*mcp.TextContent).Text
}

// TestToolCallCarriesItsCallerAlone: each tool call is a POST to /graphql
// of its own with its caller's credentials and no other's, and the
// arguments as its variables.
func TestToolCallCarriesItsCallerAlone(t *testing.T) {
	t.Parallel()
	f := &graphqlFake{answer: answering(200, nil, `{"data":{"payment":{"id":"pay_1"}}}`)}
	srv := serve(t, f)
	callers := map[string]http.Header{
		"token": {"Authorization": {"Bearer " + okToken}},
		"pair":  {"X-Api-Key": {"key-B"}, "X-Api-Secret": {"secret-B"}},
	}
	for name, h := range callers {
		res, err := connect(t, srv, h).CallTool(t.Context(), &mcp.CallToolParams{Name: "getPayment", Arguments: map[string]any{"id": "pay_1"}})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %v", name, err, res)
		}
	}
	if len(f.seen) != 2 {
		t.Fatalf("%d GraphQL requests for 2 tool calls", len(f.seen))
	}
	for i, r := range f.seen {
		auth, key := r.Header.Get("Authorization"), r.Header.Get("X-Api-Key")
		if (auth == "") == (key == "") {
			t.Errorf("request %d: Authorization %q and x-api-key %q: want exactly one caller's", i, auth, key)
		}
		if r.Method != http.MethodPost || r.URL.Path != "/graphql" {
			t.Errorf("request %d: %s %s", i, r.Method, r.URL.Path)
		}
		var body struct {
			OperationName string
			Variables     map[string]string
		}
		if err := json.Unmarshal([]byte(f.bodies[i]), &body); err != nil || body.OperationName != "getPayment" || body.Variables["id"] != "pay_1" {
			t.Errorf("request %d's body %s", i, f.bodies[i])
		}
	}
}

// TestConcurrentCallersApart: one MCP server serves every caller; calls
// of many callers at once each reach GraphQL with their own credentials
// alone, and each gets its own answer back.
func TestConcurrentCallersApart(t *testing.T) {
	t.Parallel()
	f := &graphqlFake{answer: func(w http.ResponseWriter, r *http.Request) {
		b, _ := json.Marshal(map[string]any{"data": map[string]any{"payment": map[string]string{
			"id": r.Header.Get("X-Api-Key") + "|" + r.Header.Get("X-Api-Secret") + "|" + r.Header.Get("Authorization")}}})
		w.Write(b)
	}}
	srv := serve(t, f)
	const callers, calls = 8, 10
	var wg sync.WaitGroup
	for i := range callers {
		h := http.Header{"X-Api-Key": {fmt.Sprintf("key-%d", i)}, "X-Api-Secret": {fmt.Sprintf("secret-%d", i)}}
		want := fmt.Sprintf(`{"payment":{"id":"key-%d|secret-%d|"}}`, i, i)
		s := connect(t, srv, h)
		wg.Go(func() {
			for range calls {
				res, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: "getPayment", Arguments: map[string]any{"id": "pay_1"}})
				if err != nil {
					t.Error(err)
					return
				}
				if got, _ := json.Marshal(res.StructuredContent); string(got) != want {
					t.Errorf("caller %d got %s, want %s", i, got, want)
				}
			}
		})
	}
	wg.Wait()
	if len(f.seen) != callers*calls {
		t.Errorf("%d GraphQL requests for %d tool calls", len(f.seen), callers*calls)
	}
}

// TestAdmitChargesAllButToolCalls: discovery (initialize) and
// tools/list are each charged as a request; a tool call is not (its
// operation's request is), and it still runs once the others are refused.
func TestAdmitChargesAllButToolCalls(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var charged []string
	refuse := false
	admit := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(strings.NewReader(string(b)))
			var m struct{ Method string }
			_ = json.Unmarshal(b, &m)
			mu.Lock()
			charged = append(charged, m.Method)
			no := refuse
			mu.Unlock()
			if no {
				w.Header().Set("Retry-After", "1")
				http.Error(w, `{"errors":[{"message":"rate limit reached","extensions":{"code":"RATE_LIMITED"}}]}`, http.StatusTooManyRequests)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	f := &graphqlFake{answer: answering(200, nil, `{"data":{"payment":null}}`)}
	s := connect(t, serveAdmitting(t, f, admit), http.Header{"Authorization": {"Bearer " + okToken}})
	if _, err := s.ListTools(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	refuse = true
	mu.Unlock()
	if _, err := s.ListTools(t.Context(), nil); err == nil {
		t.Error("tools/list over the budget answered")
	}
	res, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: "getPayment", Arguments: map[string]any{"id": "pay_1"}})
	if err != nil || res.IsError {
		t.Fatalf("tools/call: %v %v", err, res)
	}
	want := []string{"server/discover", "tools/list", "tools/list"}
	if !slices.Equal(charged, want) || len(f.seen) != 1 {
		t.Errorf("charged %v, want %v; GraphQL requests %d, want 1", charged, want, len(f.seen))
	}
}

// TestArbitraryTool: the graphql tool, when offered, sends the caller's
// query text as it is; without one it is refused before any request.
func TestArbitraryTool(t *testing.T) {
	t.Parallel()
	f := &graphqlFake{answer: answering(200, nil, `{"data":{"payment":null}}`)}
	s := connect(t, serveWith(t, f, func(c *mcpserver.Config) { c.Arbitrary = true }), http.Header{"Authorization": {"Bearer " + okToken}})
	cases := []struct {
		name    string
		args    map[string]any
		isError bool
	}{
		{"query", map[string]any{"query": "query Q($id: ID!) { payment(id: $id) { id } }", "variables": map[string]any{"id": "p"}}, false},
		{"no_query", map[string]any{"variables": map[string]any{}}, true},
	}
	for _, tc := range cases {
		res, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: "graphql", Arguments: tc.args})
		if err != nil || res.IsError != tc.isError {
			t.Errorf("%s: %v %+v", tc.name, err, res)
		}
	}
	var body struct {
		Query      string
		DocumentID string
		Variables  map[string]string
	}
	if len(f.seen) != 1 || json.Unmarshal([]byte(f.bodies[0]), &body) != nil ||
		body.Query != "query Q($id: ID!) { payment(id: $id) { id } }" || body.Variables["id"] != "p" || body.DocumentID != "" {
		t.Errorf("GraphQL requests %d, first %v", len(f.seen), f.bodies)
	}
}

// TestManifestTools: a named query of the manifest is a tool that sends
// its documentId; an anonymous one, or one invalid against the schema, is
// none; under enforce mode the built-ins are not offered.
func TestManifestTools(t *testing.T) {
	t.Parallel()
	manifest := `{"d1": "query paymentStatus($id: ID!) { payment(id: $id) { id status } }",
	  "d2": "{ payment(id: \"x\") { id } }", "d3": "query broken { nope }"}`
	cases := []struct {
		name string
		mode trusteddocs.Mode
		want []string
	}{
		{"allow", trusteddocs.Allow, []string{"getCheckoutSession", "getPayment", "getPaymentLink", "listPayments", "paymentStatus"}},
		{"enforce", trusteddocs.Enforce, []string{"paymentStatus"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "persisted_queries.json")
			if err := os.WriteFile(path, []byte(manifest), 0o600); err != nil {
				t.Fatal(err)
			}
			docs, err := trusteddocs.New(trusteddocs.Config{Mode: tc.mode, Path: path})
			if err != nil {
				t.Fatal(err)
			}
			f := &graphqlFake{answer: answering(200, nil, `{"data":{"payment":null}}`)}
			s := connect(t, serveWith(t, f, func(c *mcpserver.Config) { c.Documents = docs }), http.Header{"Authorization": {"Bearer " + okToken}})
			tools, err := s.ListTools(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tl := range tools.Tools {
				names = append(names, tl.Name)
			}
			slices.Sort(names)
			if !slices.Equal(names, tc.want) {
				t.Fatalf("tools %v, want %v", names, tc.want)
			}
			if _, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: "paymentStatus", Arguments: map[string]any{"id": "p"}}); err != nil {
				t.Fatal(err)
			}
			var body struct{ DocumentID, OperationName string }
			if len(f.bodies) != 1 || json.Unmarshal([]byte(f.bodies[0]), &body) != nil || body.DocumentID != "d1" || body.OperationName != "paymentStatus" {
				t.Errorf("GraphQL bodies %v: want documentId d1", f.bodies)
			}
			// A reload (SIGHUP) changes the tools on the next request.
			if err := os.WriteFile(path, []byte(`{"d9": "query linkTitle($id: ID!) { paymentLink(id: $id) { title } }"}`), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := docs.Reload(); err != nil {
				t.Fatal(err)
			}
			tools, err = s.ListTools(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(tools.Tools, func(tl *mcp.Tool) bool { return tl.Name == "linkTitle" }) ||
				slices.ContainsFunc(tools.Tools, func(tl *mcp.Tool) bool { return tl.Name == "paymentStatus" }) {
				t.Errorf("after the reload: %d tools, want linkTitle and not paymentStatus", len(tools.Tools))
			}
		})
	}
}

// TestToolErrors: a GraphQL error is a tool result with isError, the
// contract's code and retryAfter; an answer that is not GraphQL is never
// passed on.
func TestToolErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		status    int
		header    http.Header
		body      string
		code      string
		retry     int // 0: none
		forbidden string
	}{
		{name: "rate_limited_header", status: 429, header: http.Header{"Retry-After": {"7"}},
			body: `{"errors":[{"message":"rate limit reached","extensions":{"code":"RATE_LIMITED"}}]}`, code: "RATE_LIMITED", retry: 7},
		{name: "rate_limited_extension", status: 200,
			body: `{"errors":[{"message":"REST API busy","extensions":{"code":"RATE_LIMITED","retryAfter":3}}],"data":null}`, code: "RATE_LIMITED", retry: 3},
		{name: "over_cost", status: 400,
			body: `{"errors":[{"message":"query may make 61 REST calls","extensions":{"code":"COMPLEXITY_LIMIT_EXCEEDED"}}]}`, code: "COMPLEXITY_LIMIT_EXCEEDED"},
		{name: "not_graphql", status: 502, body: `<html>upstream stack trace secret-xyz</html>`, code: "INTERNAL_SERVER_ERROR", forbidden: "secret-xyz"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := serve(t, &graphqlFake{answer: answering(tc.status, tc.header, tc.body)})
			res, err := connect(t, srv, http.Header{"Authorization": {"Bearer " + okToken}}).
				CallTool(t.Context(), &mcp.CallToolParams{Name: "listPayments", Arguments: map[string]any{"status": "FAILED"}})
			if err != nil {
				t.Fatal(err)
			}
			body := text(t, res)
			var e struct {
				Code       string
				RetryAfter int
			}
			if err := json.Unmarshal([]byte(body), &e); err != nil || !res.IsError || e.Code != tc.code || e.RetryAfter != tc.retry {
				t.Errorf("result %s (isError %v); want %s retryAfter %d", body, res.IsError, tc.code, tc.retry)
			}
			if tc.forbidden != "" && strings.Contains(body, tc.forbidden) {
				t.Errorf("the result passes on the answer's body: %s", body)
			}
		})
	}
}

// TestAuthorize: a request without a usable token or pair is 401 with
// WWW-Authenticate naming the protected resource metadata, and no GraphQL
// request is made.
func TestAuthorize(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		header http.Header
		status int
	}{
		{"none", http.Header{}, http.StatusUnauthorized},
		{"expired", http.Header{"Authorization": {"Bearer expired"}}, http.StatusUnauthorized},
		{"tampered", http.Header{"Authorization": {"Bearer forged-value"}}, http.StatusUnauthorized},
		{"key_without_secret", http.Header{"X-Api-Key": {"k"}}, http.StatusUnauthorized},
		{"token", http.Header{"Authorization": {"Bearer " + okToken}}, http.StatusOK},
		{"pair", http.Header{"X-Api-Key": {"k"}, "X-Api-Secret": {"s"}}, http.StatusOK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := &graphqlFake{answer: answering(200, nil, `{"data":{}}`)}
			srv := serve(t, f)
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+mcpserver.Path, strings.NewReader(
				`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"getPayment","arguments":{"id":"pay_1"}}}`))
			req.Header = tc.header.Clone()
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d %s, want %d", resp.StatusCode, b, tc.status)
			}
			if tc.status != http.StatusUnauthorized {
				return
			}
			want := `resource_metadata="` + srv.URL + mcpserver.MetadataPath + `"`
			if www := resp.Header.Get("WWW-Authenticate"); !strings.Contains(www, want) {
				t.Errorf("WWW-Authenticate %q, want %s", www, want)
			}
			if strings.Contains(string(b), "forged-value") {
				t.Errorf("the refusal echoes the token: %s", b)
			}
			if len(f.seen) != 0 {
				t.Errorf("%d GraphQL requests for a refused caller", len(f.seen))
			}
		})
	}
}

// TestToolsList: the built-ins with their inputs' schemas, read from
// their variables.
func TestToolsList(t *testing.T) {
	t.Parallel()
	srv := serve(t, &graphqlFake{answer: answering(200, nil, `{"data":{}}`)})
	tools, err := connect(t, srv, http.Header{"Authorization": {"Bearer " + okToken}}).ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, outputs := map[string]string{}, map[string]any{}
	for _, tl := range tools.Tools {
		outputs[tl.Name] = tl.OutputSchema
		b, _ := json.Marshal(tl.InputSchema)
		got[tl.Name] = string(b)
		if tl.Description == "" || tl.Annotations == nil || !tl.Annotations.ReadOnlyHint {
			t.Errorf("%s: description %q annotations %+v", tl.Name, tl.Description, tl.Annotations)
		}
	}
	want := map[string]string{
		"getPayment":         `{"additionalProperties":false,"properties":{"id":{"type":"string"}},"required":["id"],"type":"object"}`,
		"getPaymentLink":     `{"additionalProperties":false,"properties":{"id":{"type":"string"}},"required":["id"],"type":"object"}`,
		"getCheckoutSession": `{"additionalProperties":false,"properties":{"id":{"type":"string"}},"required":["id"],"type":"object"}`,
		"listPayments": `{"additionalProperties":false,"properties":{"after":{"type":"string"},"first":{"type":"integer"},` +
			`"status":{"enum":["PENDING","FAILED"],"type":"string"}},"required":[],"type":"object"}`,
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: input schema\n %s\nwant\n %s", name, got[name], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("tools %v, want the four built-ins", got)
	}
	payment := `{"id":"pay_1","status":"FAILED","amount":{"amount":%s,"currency":"BDT"},"transactionId":null,"paymentMethod":"nagad",
	  "customer":{"name":null,"email":"a***@example.org","phone":null,"address":null,"city":null},"createdAt":"t","updatedAt":"t"}`
	answers := []struct {
		name, tool, data string
		ok               bool
	}{
		{"payment", "getPayment", `{"payment":` + fmt.Sprintf(payment, `"266.80"`) + `}`, true},
		{"no_payment", "getPayment", `{"payment":null}`, true},
		{"float_amount", "getPayment", `{"payment":` + fmt.Sprintf(payment, `266.8`) + `}`, false},
		{"page", "listPayments", `{"payments":{"nodes":[` + fmt.Sprintf(payment, `"1.00"`) + `],"pageInfo":{"hasNextPage":true,"endCursor":"c"}}}`, true},
		{"unknown_status", "listPayments", `{"payments":{"nodes":[` + strings.Replace(fmt.Sprintf(payment, `"1.00"`), "FAILED", "LOST", 1) + `],"pageInfo":{"hasNextPage":false,"endCursor":null}}}`, false},
	}
	for _, a := range answers {
		b, _ := json.Marshal(outputs[a.tool])
		var sch jsonschema.Schema
		if err := json.Unmarshal(b, &sch); err != nil {
			t.Fatal(err)
		}
		rs, err := sch.Resolve(nil)
		if err != nil {
			t.Fatalf("%s's output schema %s: %v", a.tool, b, err)
		}
		var v any
		if err := json.Unmarshal([]byte(a.data), &v); err != nil {
			t.Fatal(err)
		}
		if err := rs.Validate(v); (err == nil) != a.ok {
			t.Errorf("%s: %s validates %v, want %v", a.name, a.tool, err, a.ok)
		}
	}
}
