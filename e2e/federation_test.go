package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"paygraph/internal/testenv"
	"paygraph/sandbox"
	"paygraph/sessiontoken"
)

// supergraphQuery is the query through the federation gateway.
const supergraphQuery = `{ orders { id payment { id status amount { amount } customer { name } } } }`

// TestFederationSupergraph composes paygraph in its subgraph mode with a
// second (orders) subgraph and queries the supergraph through a real
// federation gateway (@apollo/gateway; e2e/federation/supergraph.mjs):
// 20 orders over 10 payments are one _entities operation and 10 REST
// calls; the composed supergraph is the checked-in fixture; a direct
// _entities of 500 references is refused with no REST call; a masked
// session token forwarded by the router gets masked customers.
func TestFederationSupergraph(t *testing.T) {
	t.Parallel()
	// docs/clients.md shows this test's query as its runnable example.
	if !strings.Contains(docFileText(t, "docs/clients.md"), supergraphQuery) {
		t.Errorf("docs/clients.md no longer shows the supergraph query %s", supergraphQuery)
	}
	node := testenv.Tool(t, "node")
	dir, err := filepath.Abs("federation")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@apollo", "gateway")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("e2e/federation's npm packages are not installed (scripts/install-federation.sh): %v", err)
		}
		t.Skip("e2e/federation's npm packages are not installed; scripts/install-federation.sh runs npm ci there")
	}
	fake := newRESTFake(t)
	p := startGateway(t, map[string]string{"REST_BASE_URL": fake.URL, "FEDERATION": "true", "TOKEN_KEYS": sessiontoken.GenerateKey()})
	var ids []string
	for _, pay := range fake.sb.Payments(fake.A.biz.APIKey)[:10] {
		ids = append(ids, pay.ID)
	}
	env := append(os.Environ(), "NODE_NO_WARNINGS=1", "PAYMENT_IDS="+strings.Join(ids, ","))

	// Composition: the supergraph of paygraph's _service SDL and the
	// orders subgraph is the fixture; a schema change that breaks
	// composition or changes the supergraph fails here.
	compose := exec.Command(node, "supergraph.mjs", "compose", p.URL+"/graphql")
	compose.Dir, compose.Env = dir, env
	var stderr strings.Builder
	compose.Stderr = &stderr
	supergraph, err := compose.Output()
	if err != nil {
		t.Fatalf("composition failed: %v\n%s", err, stderr.String())
	}
	fixture := filepath.Join(dir, "supergraph.graphql")
	if os.Getenv("UPDATE_FIXTURES") != "" {
		if err := os.WriteFile(fixture, supergraph, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != string(supergraph) {
		t.Fatalf("the composed supergraph is not e2e/federation/supergraph.graphql (UPDATE_FIXTURES=1 rewrites it):\n%s", supergraph)
	}

	gatewayURL := startSupergraph(t, node, dir, env, p.URL+"/graphql", fixture)
	token := mintTokenFor(t, p, fake.A, `{"kind":"all"}`, "masked")
	for _, tc := range []struct {
		name   string
		header http.Header
		masked bool
	}{
		{"the pair forwarded: customers as they are", fake.A.Header(), false},
		{"a masked token forwarded: masked customers", http.Header{"Authorization": {"Bearer " + token}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake.Reset()
			before := graphqlRequests(p)
			resp := postJSON(t, gatewayURL, supergraphQuery, nil, tc.header)
			var a struct {
				Data struct {
					Orders []struct {
						ID      string
						Payment *struct {
							ID       string
							Customer struct{ Name *string }
						}
					}
				}
				Errors []json.RawMessage
			}
			if err := json.Unmarshal(resp, &a); err != nil || len(a.Errors) > 0 {
				t.Fatalf("%v: %s", err, resp)
			}
			if len(a.Data.Orders) != 20 {
				t.Fatalf("%d orders, want 20: %s", len(a.Data.Orders), resp)
			}
			for i, o := range a.Data.Orders {
				if o.Payment == nil || o.Payment.ID != ids[i%10] || o.Payment.Customer.Name == nil {
					t.Fatalf("order %s: payment %+v, want %s with its customer: %s", o.ID, o.Payment, ids[i%10], resp)
				}
				if masked := isInitials(*o.Payment.Customer.Name); masked != tc.masked {
					t.Errorf("order %s: customer %q, masked %v", o.ID, *o.Payment.Customer.Name, tc.masked)
				}
			}
			if got := fake.Calls(func(c restCall) bool { return c.Route == sandbox.RoutePayment }); got != 10 || fake.Calls(nil) != 10 {
				t.Errorf("%d payment REST calls (%d in all), want 10", got, fake.Calls(nil))
			}
			if ops := graphqlRequests(p) - before; ops != 1 {
				t.Errorf("paygraph served %v operations, want one _entities operation", ops)
			}
		})
	}

	t.Run("the router forwards no credentials: UNAUTHENTICATED, no REST call", func(t *testing.T) {
		fake.Reset()
		resp := postJSON(t, gatewayURL, supergraphQuery, nil, http.Header{})
		if !strings.Contains(string(resp), "UNAUTHENTICATED") {
			t.Errorf("answer %.300s, want UNAUTHENTICATED", resp)
		}
		if n := fake.Calls(nil); n != 0 {
			t.Errorf("%d REST calls, want 0", n)
		}
	})

	t.Run("another merchant's references: null and NOT_FOUND, never A's records", func(t *testing.T) {
		// B is a merchant once the REST API accepted its pair: until then
		// its budgets are an unaccepted caller's.
		own := fake.sb.Payments(fake.B.biz.APIKey)[0].ID
		if resp := postJSON(t, p.URL+"/graphql", `query($id: ID!) { payment(id: $id) { id } }`, map[string]any{"id": own}, fake.B.Header()); !strings.Contains(string(resp), own) {
			t.Fatalf("B's own payment: %.300s", resp)
		}
		reps := make([]any, 10)
		for i := range reps {
			reps[i] = map[string]any{"__typename": "Payment", "id": ids[i]}
		}
		resp := postJSON(t, p.URL+"/graphql", `query($r: [_Any!]!) { _entities(representations: $r) { ... on Payment { id customer { name } } } }`,
			map[string]any{"r": reps}, fake.B.Header())
		var a struct {
			Data struct {
				Entities []json.RawMessage `json:"_entities"`
			} `json:"data"`
			Errors []struct{ Extensions struct{ Code string } }
		}
		if err := json.Unmarshal(resp, &a); err != nil || len(a.Data.Entities) != 10 || len(a.Errors) != 10 {
			t.Fatalf("%v: %.600s", err, resp)
		}
		for i, e := range a.Data.Entities {
			if string(e) != "null" || a.Errors[i].Extensions.Code != "NOT_FOUND" {
				t.Errorf("entity %d: %s (%s), want null and NOT_FOUND", i, e, a.Errors[i].Extensions.Code)
			}
		}
	})

	t.Run("500 references sent directly: refused before any REST call", func(t *testing.T) {
		fake.Reset()
		reps := make([]any, 500)
		for i := range reps {
			reps[i] = map[string]any{"__typename": "Payment", "id": ids[i%10]}
		}
		resp := postJSON(t, p.URL+"/graphql", `query($r: [_Any!]!) { _entities(representations: $r) { ... on Payment { id } } }`,
			map[string]any{"r": reps}, fake.A.Header())
		if !strings.Contains(string(resp), "COMPLEXITY_LIMIT_EXCEEDED") {
			t.Errorf("answer %.300s, want COMPLEXITY_LIMIT_EXCEEDED", resp)
		}
		if n := fake.Calls(nil); n != 0 {
			t.Errorf("%d REST calls, want 0", n)
		}
	})
}

// isInitials reports whether name is a masked customer's name ("S. S.").
func isInitials(name string) bool {
	for _, w := range strings.Fields(name) {
		if utf8.RuneCountInString(w) != 2 || !strings.HasSuffix(w, ".") {
			return false
		}
	}
	return name != ""
}

// startSupergraph serves the orders subgraph and the federation gateway
// (supergraph.mjs serve) and returns the gateway's URL.
func startSupergraph(t *testing.T, node, dir string, env []string, paygraph, supergraph string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, node, "supergraph.mjs", "serve", paygraph, supergraph)
	cmd.Dir, cmd.Env = dir, env
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(out)
		for s.Scan() {
			if u, ok := strings.CutPrefix(s.Text(), "gateway "); ok {
				line <- u
			}
		}
		close(line)
	}()
	select {
	case u, ok := <-line:
		if !ok {
			t.Fatalf("the federation gateway exited: %s", stderr.String())
		}
		return u
	case <-time.After(60 * time.Second):
		t.Fatalf("the federation gateway did not start within 60 s: %s", stderr.String())
	}
	return ""
}

// mintTokenFor gets a session token of scope at the customer-data level
// for merchant m from the gateway's /auth/token.
func mintTokenFor(t *testing.T, p *proc, m merchant, scope, level string) string {
	t.Helper()
	h := m.Header()
	h.Set("Content-Type", "application/json")
	body, err := doPost(p.client, p.URL+"/auth/token", `{"ttlSeconds":600,"scope":`+scope+`,"customerData":"`+level+`"}`, h)
	var tok struct{ Token string }
	if err != nil || json.Unmarshal(body, &tok) != nil || tok.Token == "" {
		t.Fatalf("/auth/token: %v %s", err, body)
	}
	return tok.Token
}

func postJSON(t *testing.T, url, query string, vars map[string]any, h http.Header) []byte {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	h = h.Clone()
	h.Set("Content-Type", "application/json")
	body, err := doPost(http.DefaultClient, url, string(b), h)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

func doPost(c *http.Client, url, body string, h http.Header) ([]byte, error) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header = h
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, err = bufio.NewReader(resp.Body).WriteTo(&b)
	return []byte(b.String()), err
}

// graphqlRequests is the sum of paygraph_graphql_requests_total's series.
func graphqlRequests(p *proc) float64 {
	sum := 0.0
	for line := range strings.Lines(p.Metrics()) {
		if rest, ok := strings.CutPrefix(line, "paygraph_graphql_requests_total{"); ok {
			if _, v, ok := strings.Cut(rest, "} "); ok {
				f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
				sum += f
			}
		}
	}
	return sum
}
