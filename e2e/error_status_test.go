package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"paygraph/sandbox"
)

// TestErrorStatusesAsDocumented sends one request per error code (and per
// way of reaching it) to the sandbox-mode binary, under each media type,
// and checks the HTTP status against the "HTTP" column of docs/errors.md's
// table: 200 for a field error, 200/400 for a request error (by
// media type), the edge's own status for its refusals. Codes the sandbox
// cannot produce (REST 403, 429, 5xx, a panic) are field errors by
// construction and are not sent here (gateway/upstream_test.go covers
// their codes against httptest servers).
func TestErrorStatusesAsDocumented(t *testing.T) {
	t.Parallel()
	fx := sandbox.New(sandbox.Options{}).Fixtures()[0]
	creds := http.Header{"X-Api-Key": {fx.Business.APIKey}, "X-Api-Secret": {fx.Business.APISecret}}
	list := `payments(first: 100) { edges { cursor node { id status amount { amount paisa currency } customer { name email phone } createdAt updatedAt transactionId paymentMethod } } }`
	var ids []string
	for i := range 100 {
		ids = append(ids, fmt.Sprintf(`"pay_x%d"`, i))
	}
	// A REST API slower than REST_TIMEOUT: each call is answered only
	// when the gateway gives up on it.
	slow := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(slow.Close)
	var fanOut strings.Builder
	for i := range 6 {
		fmt.Fprintf(&fanOut, "a%d: nodes(ids: [%s]) { id } ", i, strings.Join(ids, ","))
	}
	manifest := trustedManifest(t, "query One { payments(first: 1) { nodes { id } } }")

	type statusCase struct {
		name, code, row string // row: the error table row's first cell, when not the code itself
		env             map[string]string
		method, ctype   string // "" : POST, application/json
		header          func(p *proc) http.Header
		body            string // the JSON body (POST) or the query string (GET)
		spend           int    // requests sent first, to spend a budget
		json, gr        int    // the status under application/json, application/graphql-response+json
	}
	q := func(query string) string { b, _ := json.Marshal(map[string]string{"query": query}); return string(b) }
	withCreds := func(*proc) http.Header { return creds.Clone() }
	// The field limit is twice MAX_COMPLEXITY, the query length limit
	// half of MAX_BODY_BYTES; the depth limit is fixed at 15 (deep: 17).
	limits := map[string]string{"MAX_COMPLEXITY": "3", "MAX_BODY_BYTES": "4000"}
	deep := "{" + strings.Repeat(" a {", 16) + " b" + strings.Repeat(" }", 16) + " }"
	cases := []statusCase{
		{name: "missing_credential_header", code: "UNAUTHENTICATED", header: func(*proc) http.Header { return http.Header{} },
			body: q(`{ payments(first: 1) { nodes { id } } }`), json: 200, gr: 200},
		{name: "bad_session_token", code: "UNAUTHENTICATED", header: func(*proc) http.Header {
			return http.Header{"Authorization": {"Bearer v4.local.nonsense"}}
		}, body: q(`{ payments(first: 1) { nodes { id } } }`), json: 401, gr: 401},
		{name: "credential_header_twice", code: "UNAUTHENTICATED", header: func(*proc) http.Header {
			h := creds.Clone()
			h.Add("X-Api-Key", fx.Business.APIKey)
			return h
		}, body: q(`{ payments(first: 1) { nodes { id } } }`), json: 400, gr: 400},
		{name: "outside_token_scope", code: "FORBIDDEN", header: func(p *proc) http.Header {
			return http.Header{"Authorization": {"Bearer " + mintToken(t, p, fx, `{"kind":"payment","id":"`+fx.PaymentID+`"}`)}}
		}, body: q(`{ payments(first: 1) { nodes { id } } }`), json: 200, gr: 200},
		{name: "not_found", code: "NOT_FOUND", header: withCreds,
			body: q(`{ paymentLink(id: "` + fx.PaymentLinkID + `x") { id } }`), json: 200, gr: 200},
		{name: "first_over_100", code: "BAD_USER_INPUT", header: withCreds,
			body: q(`{ payments(first: 300) { nodes { id } } }`), json: 200, gr: 200},
		{name: "variable_that_does_not_coerce", code: "BAD_USER_INPUT", header: withCreds,
			body: `{"query":"query($s: PaymentStatus) { payments(first: 1, status: $s) { nodes { id } } }","variables":{"s":"NOPE"}}`, json: 200, gr: 400},
		{name: "not_a_graphql_request", code: "BAD_USER_INPUT", header: withCreds, body: `{}`, json: 400, gr: 400},
		{name: "subscription_without_a_stream", code: "BAD_USER_INPUT", header: withCreds,
			body: `{"query":"subscription($id: ID!) { paymentUpdated(id: $id) { status } }","variables":{"id":"` + fx.PaymentID + `"}}`, json: 200, gr: 400},
		{name: "subscription_over_GET_without_a_stream", code: "BAD_USER_INPUT", header: withCreds, method: http.MethodGet,
			body: "query=" + url.QueryEscape(`subscription { paymentUpdated(id: "`+fx.PaymentID+`") { status } }`), json: 200, gr: 400},
		{name: "mutation_over_GET", code: "BAD_USER_INPUT", header: withCreds, method: http.MethodGet,
			body: "query=" + "mutation%20%7B%20x%20%7D", json: 405, gr: 405},
		{name: "body_over_MAX_BODY_BYTES", code: "BAD_USER_INPUT", header: withCreds,
			body: `{"query":"{ __typename }","pad":"` + strings.Repeat("x", 70000) + `"}`, json: 413, gr: 413},
		{name: "POST_not_JSON", code: "BAD_USER_INPUT", header: withCreds, ctype: "text/plain",
			body: `{ __typename }`, json: 415, gr: 415},
		// The first request is anonymous (its pair not yet accepted) and
		// its REST call accepts the pair; the next two spend the burst.
		{name: "requests_budget_at_the_edge", code: "RATE_LIMITED", row: "`RATE_LIMITED` (the gateway's own)", header: withCreds,
			env:  map[string]string{"RATE_LIMIT_REQUESTS_PER_SECOND": "1"},
			body: q(`{ payments(first: 1) { nodes { id } } }`), spend: 3, json: 429, gr: 429},
		{name: "REST_calls_budget_after_the_estimate", code: "RATE_LIMITED", row: "`RATE_LIMITED` (the gateway's own)", header: withCreds,
			env:  map[string]string{"MAX_COMPLEXITY": "10", "RATE_LIMIT_REST_CALLS_PER_SECOND": "1"},
			body: q(`{ payments(first: 5) { nodes { customer { address } } } }`), spend: 1, json: 200, gr: 400},
		{name: "REST_timeout", code: "UPSTREAM_TIMEOUT", header: withCreds,
			env:  map[string]string{"REST_BASE_URL": slow.URL, "REST_TIMEOUT": "100ms", "REST_MAX_RETRIES": "0", "BREAKER_FAILURES": "0"},
			body: q(`{ payments(first: 1) { nodes { id } } }`), json: 200, gr: 200},
		{name: "depth", code: "DEPTH_LIMIT_EXCEEDED", row: "`DEPTH_LIMIT_EXCEEDED`, `FIELD_LIMIT_EXCEEDED`, `QUERY_TOO_LARGE`", header: withCreds,
			body: q(deep), json: 200, gr: 400},
		{name: "fields", code: "FIELD_LIMIT_EXCEEDED", row: "`DEPTH_LIMIT_EXCEEDED`, `FIELD_LIMIT_EXCEEDED`, `QUERY_TOO_LARGE`", header: withCreds, env: limits,
			body: q(`{ a: __typename b: __typename c: __typename d: __typename e: __typename f: __typename g: __typename }`), json: 200, gr: 400},
		{name: "query_length", code: "QUERY_TOO_LARGE", row: "`DEPTH_LIMIT_EXCEEDED`, `FIELD_LIMIT_EXCEEDED`, `QUERY_TOO_LARGE`", header: withCreds, env: limits,
			body: q(`{ __typename } #` + strings.Repeat("x", 2000)), json: 200, gr: 400},
		{name: "complexity", code: "COMPLEXITY_LIMIT_EXCEEDED", header: withCreds,
			body: q("{ " + fanOut.String() + "}"), json: 200, gr: 400},
		{name: "response_budget", code: "RESPONSE_TOO_LARGE", header: withCreds, env: map[string]string{"MAX_RESPONSE_BYTES": "65536"},
			body: q("{ a: " + list + " b: " + list + " c: " + list + " }"), json: 200, gr: 200},
		{name: "parse", code: "GRAPHQL_PARSE_FAILED", row: "`GRAPHQL_PARSE_FAILED`, `GRAPHQL_VALIDATION_FAILED`", header: withCreds,
			body: q(`{ payments(`), json: 200, gr: 400},
		{name: "validation", code: "GRAPHQL_VALIDATION_FAILED", row: "`GRAPHQL_PARSE_FAILED`, `GRAPHQL_VALIDATION_FAILED`", header: withCreds,
			body: q(`{ nope }`), json: 200, gr: 400},
		{name: "APQ_hash_unknown", code: "PERSISTED_QUERY_NOT_FOUND", header: withCreds,
			body: `{"extensions":{"persistedQuery":{"version":1,"sha256Hash":"` + strings.Repeat("ab", 32) + `"}}}`, json: 200, gr: 400},
		{name: "not_in_the_manifest", code: "PERSISTED_QUERY_NOT_LISTED", header: withCreds,
			env:  map[string]string{"TRUSTED_DOCUMENTS": manifest, "TRUSTED_DOCUMENTS_MODE": "enforce"},
			body: q(`{ payments(first: 2) { nodes { id } } }`), json: 200, gr: 400},
	}

	table := readmeErrorTable(t)
	// One gateway per environment, started by the test itself (a
	// sub-test's would stop when that sub-test ends).
	gateways := map[string]*proc{}
	for _, c := range cases {
		if key := fmt.Sprint(c.env); gateways[key] == nil {
			gateways[key] = startGateway(t, c.env)
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			row := c.row
			if row == "" {
				row = "`" + c.code + "`"
			}
			documented, ok := table[row]
			want := strconv.Itoa(c.json)
			if c.json != c.gr {
				want = fmt.Sprintf("%d/%d", c.json, c.gr)
			}
			if !ok {
				t.Errorf("docs/errors.md's table has no row %s", row)
			} else if !documents(documented, want) {
				t.Errorf("docs/errors.md's HTTP column for %s says %q; the gateway answers %s", row, documented, want)
			}

			p := gateways[fmt.Sprint(c.env)]
			for _, accept := range []string{"application/json", "application/graphql-response+json"} {
				send := func() (int, []byte, string) {
					var req *http.Request
					if c.method == http.MethodGet {
						req, _ = http.NewRequest(http.MethodGet, p.URL+"/graphql?"+c.body, nil)
					} else {
						req, _ = http.NewRequest(http.MethodPost, p.URL+"/graphql", bytes.NewReader([]byte(c.body)))
					}
					req.Header = c.header(p)
					if c.method != http.MethodGet {
						ct := c.ctype
						if ct == "" {
							ct = "application/json"
						}
						req.Header.Set("Content-Type", ct)
					}
					req.Header.Set("Accept", accept)
					resp, err := p.client.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					defer resp.Body.Close()
					b, _ := io.ReadAll(resp.Body)
					return resp.StatusCode, b, resp.Header.Get("Content-Type")
				}
				for range c.spend {
					send()
				}
				status, body, ctype := send()
				// Every answer, the edge's refusals included, in the media
				// type the caller's Accept asks for.
				if mt, _, _ := strings.Cut(ctype, ";"); mt != accept {
					t.Errorf("Accept %s: HTTP %d answered Content-Type %q", accept, status, ctype)
				}
				wantStatus := c.json
				if accept != "application/json" {
					wantStatus = c.gr
				}
				var g struct {
					Errors []struct{ Extensions struct{ Code string } }
				}
				_ = json.Unmarshal(body, &g)
				if status != wantStatus || len(g.Errors) == 0 || g.Errors[0].Extensions.Code != c.code {
					t.Errorf("Accept %s: HTTP %d, want %d with %s: %.300s", accept, status, wantStatus, c.code, body)
				}
			}
		})
	}
	// A spoiled column is caught: the check above reads the table at test
	// time.
	t.Run("broken_column", func(t *testing.T) {
		spoiled := strings.Replace(docFileText(t, errorsDoc), "| `COMPLEXITY_LIMIT_EXCEEDED` | 200/400 |", "| `COMPLEXITY_LIMIT_EXCEEDED` | 400 |", 1)
		if got := errorTableOf(spoiled)["`COMPLEXITY_LIMIT_EXCEEDED`"]; documents(got, "200/400") {
			t.Errorf("the spoiled row %q passes for 200/400", got)
		}
	})
}

// documents reports whether an HTTP cell ("200; 401; 400", "429;
// 200/400") lists status, one of its items exactly.
func documents(cell, status string) bool {
	for _, item := range strings.FieldsFunc(cell, func(r rune) bool { return r == ';' || r == ',' }) {
		if strings.TrimSpace(item) == status {
			return true
		}
	}
	return false
}

// errorsDoc is the documentation file holding the error table.
const errorsDoc = "docs/errors.md"

// readmeErrorTable is docs/errors.md's error table: its HTTP cell by its
// first cell.
func readmeErrorTable(t *testing.T) map[string]string {
	t.Helper()
	table := errorTableOf(docFileText(t, errorsDoc))
	if len(table) < 10 {
		t.Fatalf("%s's error table has %d rows with an HTTP column", errorsDoc, len(table))
	}
	return table
}

// errorTableOf reads the rows of an error table ("| `CODE` | HTTP | When
// |") of a documentation file.
func errorTableOf(text string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		cells := strings.Split(line, " | ")
		if len(cells) >= 3 && strings.HasPrefix(line, "| `") {
			out[strings.TrimPrefix(cells[0], "| ")] = cells[1]
		}
	}
	return out
}

// mintToken gets a session token of scope (JSON) for the fixture's
// business from the gateway's /auth/token.
func mintToken(t *testing.T, p *proc, fx sandbox.Fixture, scope string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, p.URL+"/auth/token", strings.NewReader(`{"ttlSeconds":600,"scope":`+scope+`}`))
	req.Header = http.Header{"Content-Type": {"application/json"},
		"X-Api-Key": {fx.Business.APIKey}, "X-Api-Secret": {fx.Business.APISecret}}
	resp, err := p.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct{ Token string }
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || tok.Token == "" {
		t.Fatalf("/auth/token: %d %v", resp.StatusCode, err)
	}
	return tok.Token
}

// trustedManifest writes the binary's -manifest of query into a temporary
// file and returns its path.
func trustedManifest(t *testing.T, query string) string {
	t.Helper()
	dir := t.TempDir()
	doc := filepath.Join(dir, "one.graphql")
	if err := os.WriteFile(doc, []byte(query), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(gatewayBinary(t), "-manifest", doc).Output()
	if err != nil {
		t.Fatalf("-manifest: %v", err)
	}
	path := filepath.Join(dir, "manifest.json")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
