package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"paygraph/internal/gqltest"
	"paygraph/sandbox"
	"paygraph/sessiontoken"
)

// mcpSession connects the Go SDK's client to p's /mcp with h, in the
// latest protocol version or the one given.
func mcpSession(t *testing.T, p *proc, h http.Header, version ...string) *mcp.ClientSession {
	t.Helper()
	opts := &mcp.ClientSessionOptions{}
	if len(version) > 0 {
		opts.ProtocolVersion = version[0]
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "paygraph-e2e", Version: "1"}, nil)
	s, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{
		Endpoint: p.URL + "/mcp", HTTPClient: &http.Client{Transport: gqltest.HeaderTransport(h), Timeout: 30 * time.Second},
	}, opts)
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// mcpMint is a session token for m from p's /auth/token.
func mcpMint(t *testing.T, p *proc, m merchant, body string) string {
	t.Helper()
	c := &gqltest.Client{URL: p.URL, Forbidden: []string{m.Secret}}
	r := c.Do(t, http.MethodPost, "/auth/token", m.Header(), []byte(body))
	var a struct{ Token string }
	if err := json.Unmarshal(r.Raw, &a); err != nil || r.Status != http.StatusOK || a.Token == "" {
		t.Fatalf("mint: status %d %s", r.Status, r.Raw)
	}
	return a.Token
}

func bearer(token string) http.Header { return http.Header{"Authorization": {"Bearer " + token}} }

// toolError is a refused tool call's body.
type toolError struct {
	Code       string
	Message    string
	RetryAfter *int
}

func callTool(t *testing.T, s *mcp.ClientSession, name string, args map[string]any) (*mcp.CallToolResult, string) {
	t.Helper()
	res, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	text := ""
	if len(res.Content) == 1 {
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			text = tc.Text
		}
	}
	return res, text
}

// TestMCPEndpoint runs the Go SDK's MCP client against the binary's /mcp:
// initialize and tools/list (the manifest's query and the four built-ins,
// with their input schemas); listPayments with status FAILED answering the
// ids of the same GraphQL query with the same REST calls, its receipt in
// _meta; a masked token's customers masked; an expired token refused 401
// with RFC 9728 metadata and no REST call; an over-cost call refused
// before any REST call; a rate-limited merchant told retryAfter.
func TestMCPEndpoint(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the gateway binary: not in -short")
	}
	fake := newRESTFake(t)
	key := sessiontoken.GenerateKey()
	manifest := trustedManifest(t, "query paymentsByIds($ids: [ID!]!) { nodes(ids: $ids) { id } }")
	p := startGateway(t, map[string]string{
		"REST_BASE_URL": fake.URL, "TOKEN_KEYS": key, "MAX_COMPLEXITY": "60",
		"TRUSTED_DOCUMENTS": manifest, "TRUSTED_DOCUMENTS_MODE": "allow",
	})
	token := mcpMint(t, p, fake.A, `{"ttlSeconds":600,"scope":{"kind":"all"},"customerData":"full"}`)
	s := mcpSession(t, p, bearer(token))
	outputs := map[string]any{} // the tools' output schemas, by name

	t.Run("tools_list", func(t *testing.T) {
		tools, err := s.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		schemas := map[string]string{}
		for _, tl := range tools.Tools {
			names = append(names, tl.Name)
			b, _ := json.Marshal(tl.InputSchema)
			schemas[tl.Name] = string(b)
			outputs[tl.Name] = tl.OutputSchema
		}
		slices.Sort(names)
		want := []string{"getCheckoutSession", "getPayment", "getPaymentLink", "listPayments", "paymentsByIds"}
		if !slices.Equal(names, want) {
			t.Fatalf("tools %v, want %v", names, want)
		}
		for name, wantIn := range map[string]string{
			"paymentsByIds": `"ids":{"items":{"type":"string"},"type":"array"}`,
			"listPayments":  `"status":{"enum":["PENDING","SUCCEEDED","FAILED","CANCELLED","REFUNDED"],"type":"string"}`,
			"getPayment":    `"required":["id"]`,
		} {
			if !strings.Contains(schemas[name], wantIn) {
				t.Errorf("%s's input schema %s lacks %s", name, schemas[name], wantIn)
			}
		}
	})

	t.Run("list_failed_as_graphql", func(t *testing.T) {
		fake.Reset()
		c := &gqltest.Client{URL: p.URL, Forbidden: []string{fake.A.Secret}}
		// The selection the built-in makes.
		g := c.Post(t, bearer(token), `query listPayments { payments(status: FAILED) { nodes { id status amount { amount currency }
		  transactionId paymentMethod customer { name email phone address city } createdAt updatedAt } pageInfo { hasNextPage endCursor } } }`, nil).WantNoErrors(t)
		gqlCalls := fake.Calls(nil)
		var gd struct {
			Payments struct{ Nodes []struct{ ID string } }
		}
		g.Decode(t, &gd)
		fake.Reset()
		res, text := callTool(t, s, "listPayments", map[string]any{"status": "FAILED"})
		mcpCalls := fake.Calls(nil)
		if res.IsError {
			t.Fatalf("listPayments: %s", text)
		}
		var md struct {
			Payments struct {
				Nodes []struct {
					ID     string
					Status string
					Amount struct{ Amount string }
				}
				PageInfo struct{ HasNextPage bool }
			}
		}
		if err := json.Unmarshal([]byte(text), &md); err != nil {
			t.Fatal(err)
		}
		var gIDs, mIDs []string
		for _, n := range gd.Payments.Nodes {
			gIDs = append(gIDs, n.ID)
		}
		for _, n := range md.Payments.Nodes {
			mIDs = append(mIDs, n.ID)
			if n.Status != "FAILED" || n.Amount.Amount == "" {
				t.Errorf("payment %s: status %s amount %q", n.ID, n.Status, n.Amount.Amount)
			}
		}
		if len(gIDs) == 0 || !slices.Equal(gIDs, mIDs) {
			t.Errorf("MCP ids (%d) %v, GraphQL ids (%d) %v", len(mIDs), mIDs, len(gIDs), gIDs)
		}
		if err := validates(outputs["listPayments"], text); err != nil {
			t.Errorf("the answer does not match listPayments' output schema: %v", err)
		}
		if mcpCalls != gqlCalls || mcpCalls == 0 {
			t.Errorf("REST calls: MCP %d, GraphQL %d", mcpCalls, gqlCalls)
		}
		if res.Meta["receipt"] == nil || res.Meta["requestId"] == nil {
			t.Errorf("_meta %v: want the receipt and the request id", res.Meta)
		}
		if strings.Contains(text, fake.A.Secret) || strings.Contains(text, token) {
			t.Error("the tool's answer holds the secret or the token")
		}
	})

	t.Run("previous_protocol_version", func(t *testing.T) {
		prev := mcpSession(t, p, bearer(token), "2025-11-25")
		if v := prev.InitializeResult().ProtocolVersion; v != "2025-11-25" {
			t.Errorf("negotiated %q, want 2025-11-25", v)
		}
		res, text := callTool(t, prev, "listPayments", map[string]any{"status": "FAILED", "first": 1})
		if res.IsError || !strings.Contains(text, `"status":"FAILED"`) {
			t.Errorf("listPayments over 2025-11-25: %s", text)
		}
	})

	t.Run("masked_token_masked", func(t *testing.T) {
		masked := mcpMint(t, p, fake.A, `{"ttlSeconds":600,"scope":{"kind":"all"},"customerData":"masked"}`)
		full := fake.sb.Payments(fake.A.biz.APIKey)[0]
		_, ftext := callTool(t, s, "getPayment", map[string]any{"id": full.ID})
		mres, mtext := callTool(t, mcpSession(t, p, bearer(masked)), "getPayment", map[string]any{"id": full.ID})
		if mres.IsError {
			t.Fatalf("masked token's call refused: %s", mtext)
		}
		var f, m struct {
			Payment struct{ Customer struct{ Email *string } }
		}
		_ = json.Unmarshal([]byte(ftext), &f)
		_ = json.Unmarshal([]byte(mtext), &m)
		if f.Payment.Customer.Email == nil || *f.Payment.Customer.Email == "" {
			t.Fatalf("full token's answer %s: no email to compare", ftext)
		}
		if m.Payment.Customer.Email != nil && *m.Payment.Customer.Email == *f.Payment.Customer.Email {
			t.Errorf("masked token's answer %s holds the full email", mtext)
		}
	})

	t.Run("expired_token_401", func(t *testing.T) {
		ring, err := sessiontoken.ParseKeyring(key)
		if err != nil {
			t.Fatal(err)
		}
		old, _, err := ring.WithClock(func() time.Time { return time.Now().Add(-time.Hour) }).
			Mint(sessiontoken.Credentials{APIKey: fake.A.Key, APISecret: fake.A.Secret}, sessiontoken.AllReads(), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		fake.Reset()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, p.URL+"/mcp", strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"listPayments","arguments":{}}}`))
		req.Header = http.Header{"Authorization": {"Bearer " + old}, "Content-Type": {"application/json"},
			"Accept": {"application/json, text/event-stream"}}
		resp, err := p.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		www := resp.Header.Get("WWW-Authenticate")
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(www, `resource_metadata="`+p.URL+`/.well-known/oauth-protected-resource/mcp"`) {
			t.Errorf("status %d WWW-Authenticate %q; want 401 naming the metadata", resp.StatusCode, www)
		}
		if n := fake.Calls(nil); n != 0 {
			t.Errorf("%d REST calls for an expired token", n)
		}
		code, body := p.get("/.well-known/oauth-protected-resource/mcp", 5*time.Second)
		if code != http.StatusOK || !strings.Contains(string(body), `"resource":"`+p.URL+`/mcp"`) {
			t.Errorf("metadata: %d %s", code, body)
		}
	})

	t.Run("over_cost_refused", func(t *testing.T) {
		fake.Reset()
		ids := make([]string, 61)
		for i := range ids {
			ids[i] = fmt.Sprintf("pay_%d", i)
		}
		res, text := callTool(t, s, "paymentsByIds", map[string]any{"ids": ids})
		var e toolError
		_ = json.Unmarshal([]byte(text), &e)
		if !res.IsError || e.Code != "COMPLEXITY_LIMIT_EXCEEDED" {
			t.Errorf("61 ids over MAX_COMPLEXITY 60: isError %v %s", res.IsError, text)
		}
		if n := fake.Calls(nil); n != 0 {
			t.Errorf("%d REST calls for a call refused on its cost", n)
		}
	})

	t.Run("merchants_apart_after_a_fault", func(t *testing.T) {
		b := mcpSession(t, p, fake.B.Header())
		bPay := fake.sb.Payments(fake.B.biz.APIKey)[0].ID
		fake.FailIDs(sandbox.Fault500, bPay)
		res, text := callTool(t, b, "getPayment", map[string]any{"id": bPay})
		fake.Fail(nil)
		var e toolError
		if err := json.Unmarshal([]byte(text), &e); err != nil || !res.IsError || e.Code == "" {
			t.Errorf("B's call answered by a REST 500: isError %v %s", res.IsError, text)
		}
		aMarks, bMarks := fake.merchantMarks(&fake.A), fake.merchantMarks(&fake.B)
		for _, c := range []struct {
			name    string
			s       *mcp.ClientSession
			foreign []string
		}{{"A", s, bMarks}, {"B", b, aMarks}} {
			res, text := callTool(t, c.s, "listPayments", map[string]any{"first": 10})
			if res.IsError || !strings.Contains(text, "pay_") {
				t.Fatalf("%s's list: %s", c.name, text)
			}
			if m := containsAny([]byte(text), c.foreign); m != "" {
				t.Errorf("%s's answer holds the other merchant's %q", c.name, m)
			}
		}
	})
}

// validates checks the JSON text against a tool's output schema.
func validates(schema any, text string) error {
	b, err := json.Marshal(schema)
	if err != nil {
		return err
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return err
	}
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		return err
	}
	return rs.Validate(v)
}

// TestMCPRateLimited: a merchant past its requests budget is told, in the
// tool's result, the contract's RATE_LIMITED and when to retry.
func TestMCPRateLimited(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the gateway binary: not in -short")
	}
	fake := newRESTFake(t)
	p := startGateway(t, map[string]string{
		"REST_BASE_URL": fake.URL, "RATE_LIMIT_REQUESTS_PER_SECOND": "1", "RATE_LIMIT_REQUESTS_BURST": "3",
	})
	s := mcpSession(t, p, fake.A.Header())
	var e toolError
	for i := range 10 {
		res, text := callTool(t, s, "listPayments", map[string]any{"first": 1})
		if !res.IsError {
			continue
		}
		if err := json.Unmarshal([]byte(text), &e); err != nil {
			t.Fatal(err)
		}
		t.Logf("refused at call %d: %s", i+1, text)
		break
	}
	if e.Code != "RATE_LIMITED" || e.RetryAfter == nil || *e.RetryAfter < 1 {
		t.Errorf("refusal %+v; want RATE_LIMITED with retryAfter", e)
	}
}

// TestMCPDocsClient runs docs/clients.md's Go client as written (its
// ```go block under "AI agents over MCP"), against the sandbox-mode
// binary, with a masked token minted from the demo pair as the doc's curl
// does: it lists the tools and the failed payments, masked.
func TestMCPDocsClient(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the gateway binary and the doc's client: not in -short")
	}
	doc, err := os.ReadFile("../docs/clients.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(doc), "## AI agents over MCP")
	_, code, ok := strings.Cut(section, "```go\n")
	code, _, closed := strings.Cut(code, "```")
	if !ok || !closed || !strings.Contains(code, "package main") {
		t.Fatal(`docs/clients.md's "AI agents over MCP" has no Go client`)
	}
	p := startGateway(t, nil)
	sb := sandbox.New(sandbox.Options{})
	fx := sb.Fixtures()[0]
	pair := http.Header{"X-Api-Key": {fx.Business.APIKey}, "X-Api-Secret": {fx.Business.APISecret}}
	c := &gqltest.Client{URL: p.URL, Forbidden: []string{fx.Business.APISecret}}
	r := c.Do(t, http.MethodPost, "/auth/token", pair, []byte(`{"ttlSeconds": 900, "scope": {"kind": "all"}, "customerData": "masked"}`))
	var minted struct{ Token string }
	if err := json.Unmarshal(r.Raw, &minted); err != nil || minted.Token == "" {
		t.Fatalf("mint: %d %s", r.Status, r.Raw)
	}
	main := filepath.Join(t.TempDir(), "main.go")
	if err := os.WriteFile(main, []byte(strings.ReplaceAll(code, "http://localhost:8080", p.URL)), 0o644); err != nil {
		t.Fatal(err)
	}
	// Run from the module's root, so that the client builds with the
	// project's own go-sdk.
	cmd := exec.CommandContext(t.Context(), "go", "run", main)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "PAYGRAPH_TOKEN="+minted.Token)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the doc's client: %v\n%s", err, out)
	}
	text := string(out)
	for _, want := range []string{"tool: listPayments", "tool: getPayment", "isError: false", `"status":"FAILED"`} {
		if !strings.Contains(text, want) {
			t.Errorf("the doc's client printed no %q:\n%s", want, text)
		}
	}
	for _, pay := range sb.Payments(fx.Business.APIKey) {
		if pay.Customer.Email != "" && strings.Contains(text, pay.Customer.Email) {
			t.Errorf("a masked token's answer holds a customer's email:\n%s", text)
		}
	}
}
