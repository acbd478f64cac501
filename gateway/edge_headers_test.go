package gateway_test

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// TestNoStoreHeadersOnEveryGraphQLAnswer: every kind of /graphql answer,
// served, refused or failed, over GET and POST, says "Cache-Control:
// no-store" and varies on Origin and the credential headers, so that no
// shared cache (CDN, Varnish) hands one merchant's answer to another for
// the same URL; and, with compression on, on Accept-Encoding.
func TestNoStoreHeadersOnEveryGraphQLAnswer(t *testing.T) {
	t.Parallel()
	const shop = "https://shop.example.com"
	g := startGateway(t, setup{env: map[string]string{"CORS_ALLOWED_ORIGINS": shop, "MAX_BODY_BYTES": "4096"}})
	biz := g.Biz[0]
	pay := g.Sandbox.Payments(biz.APIKey)[0].ID
	good := creds(biz)
	query := `{ payment(id: "` + pay + `") { id } }`
	get := func(q string) string { return "/graphql?" + url.Values{"query": {q}}.Encode() }
	with := func(h http.Header, kv ...string) http.Header {
		h = h.Clone()
		if h == nil {
			h = http.Header{}
		}
		for i := 0; i < len(kv); i += 2 {
			h.Add(kv[i], kv[i+1])
		}
		return h
	}
	postJSON := with(good, "Content-Type", "application/json")

	for _, tc := range []struct {
		name, method, target string
		header               http.Header
		body                 string
		status               int
	}{
		{"POST served", http.MethodPost, "/graphql", postJSON, `{"query":` + strconv.Quote(query) + `}`, http.StatusOK},
		{"GET served", http.MethodGet, get(query), good, "", http.StatusOK},
		{"GET served to an allowed origin", http.MethodGet, get(query), with(good, "Origin", shop), "", http.StatusOK},
		{"GET persisted query unknown", http.MethodGet, "/graphql?extensions=" + url.QueryEscape(`{"persistedQuery":{"version":1,"sha256Hash":"`+strings.Repeat("0", 64)+`"}}`), good, "", http.StatusOK},
		{"missing credentials", http.MethodGet, get(query), nil, "", http.StatusOK},
		{"credentials the REST API refuses", http.MethodGet, get(query),
			http.Header{"X-Api-Key": {biz.APIKey}, "X-Api-Secret": {"sk_test_notthisone"}}, "", http.StatusOK},
		{"REST error: not found", http.MethodGet, get(`{ payment(id: "pay_nosuchpayment") { id } }`), good, "", http.StatusOK},
		{"GET mutation (405, even though the schema has none)", http.MethodGet, get(`mutation { x }`), good, "", http.StatusMethodNotAllowed},
		{"parse error (200 under application/json)", http.MethodPost, "/graphql", postJSON, `{"query":"{ payment("}`, http.StatusOK},
		{"validation error (200 under application/json)", http.MethodPost, "/graphql", postJSON, `{"query":"{ nosuchfield }"}`, http.StatusOK},
		{"validation error (400 under application/graphql-response+json)", http.MethodPost, "/graphql", with(postJSON, "Accept", "application/graphql-response+json"), `{"query":"{ nosuchfield }"}`, http.StatusBadRequest},
		{"body over the limit (413)", http.MethodPost, "/graphql", postJSON, `{"query":"` + strings.Repeat(" ", 5000) + `{ __typename }"}`, http.StatusRequestEntityTooLarge},
		{"not JSON (400)", http.MethodPost, "/graphql", postJSON, `{"query":`, http.StatusBadRequest},
		{"wrong content type (415)", http.MethodPost, "/graphql", with(good, "Content-Type", "text/plain"), `{"query":"{ __typename }"}`, http.StatusUnsupportedMediaType},
		{"wrong method (405)", http.MethodPut, "/graphql", postJSON, `{"query":"{ __typename }"}`, http.StatusMethodNotAllowed},
		{"GET without a query (400)", http.MethodGet, "/graphql", good, "", http.StatusBadRequest},
		{"websocket upgrade without a handshake (400)", http.MethodGet, get(query), with(good, "Upgrade", "websocket", "Connection", "Upgrade"), "", http.StatusBadRequest},
		{"duplicate x-api-key (400)", http.MethodGet, get(query), with(good, "X-Api-Key", biz.APIKey), "", http.StatusBadRequest},
		{"foreign origin (403)", http.MethodGet, get(query), with(good, "Origin", "https://evil.example.net"), "", http.StatusForbidden},
		{"CORS preflight", http.MethodOptions, "/graphql",
			http.Header{"Origin": {shop}, "Access-Control-Request-Method": {"POST"}, "Access-Control-Request-Headers": {"content-type, x-api-key, x-api-secret"}}, "", http.StatusNoContent},
		{"OPTIONS without a preflight", http.MethodOptions, "/graphql", nil, "", http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, g.URL+tc.target, bytes.NewReader([]byte(tc.body)))
			if err != nil {
				t.Fatal(err)
			}
			if tc.header != nil {
				req.Header = tc.header.Clone()
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d (body %.200s)", resp.StatusCode, tc.status, body)
			}
			if cc := resp.Header.Values("Cache-Control"); len(cc) != 1 || cc[0] != "no-store" {
				t.Errorf("Cache-Control %q, want exactly no-store", cc)
			}
			varies := map[string]bool{}
			for _, line := range resp.Header.Values("Vary") {
				for _, name := range strings.Split(line, ",") {
					name = http.CanonicalHeaderKey(strings.TrimSpace(name))
					if varies[name] {
						t.Errorf("Vary lines %q name %s twice", resp.Header.Values("Vary"), name)
					}
					varies[name] = true
				}
			}
			names := []string{"Origin", "X-Api-Key", "X-Api-Secret", "Authorization"}
			if tc.header.Get("Upgrade") == "" {
				// Compression is on (from 1 KiB): an answer may be
				// compressed or not by its Accept-Encoding (not a
				// protocol upgrade, which compression passes untouched).
				names = append(names, "Accept-Encoding")
			}
			for _, name := range names {
				if !varies[name] {
					t.Errorf("Vary lines %q lack %s", resp.Header.Values("Vary"), name)
				}
			}
		})
	}
	// Other paths are not /graphql answers: GraphiQL's assets stay
	// cacheable.
	resp, err := http.Get(g.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if cc := resp.Header.Get("Cache-Control"); cc != "" {
		t.Errorf("/healthz: Cache-Control %q", cc)
	}
}
