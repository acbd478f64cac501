package gqlhttp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"paygraph/graph/errcode"
	"strings"
	"sync"
	"testing"
	"time"

	"paygraph/graph"
	"paygraph/graph/admission"
	"paygraph/sandbox"
)

// fzLogs records what the handler logs (a recovered panic is logged).
type fzLogs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *fzLogs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *fzLogs) take() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.buf.String()
	l.buf.Reset()
	return s
}

var fzValidID = func(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, c := range []byte(id) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// fzKnownCodeless matches the errors gqlgen's transports write themselves,
// bypassing the error presenter, so that they carry no extensions.code
// (docs/errors.md: "Every error carries extensions.code"). They are reported by
// TestTransportErrorsCarryACode; the fuzz target tolerates them so that it
// can look for anything else.
func fzKnownCodeless(msg string) bool {
	for _, p := range []string{"json request body could not be decoded", "transport not supported",
		"variables could not be decoded", "extensions could not be decoded", "could not cleanup body", "invalid URL escape", "invalid semicolon separator",
		"invalid APQ extension data", "unsupported APQ version"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// TestTransportErrorsCarryACode: a body that is not JSON, a content type
// the gateway does not take, or GET variables that do not decode are
// refused with a 4xx, and (docs/errors.md: every error carries
// extensions.code) with a code, without echoing the body back.
func TestTransportErrorsCarryACode(t *testing.T) {
	t.Parallel()
	sb, rc := sandboxREST(t, 16)
	a := sb.Businesses()[0]
	h := newEdge(rc, edgeConfig{})
	for _, tc := range []struct{ name, method, ctype, target, body string }{
		{"invalid JSON", http.MethodPost, "application/json", "/graphql", `{"query": "{ __typename }"`},
		{"query not a string", http.MethodPost, "application/json", "/graphql", `{"query": 1}`},
		{"JSON array", http.MethodPost, "application/json", "/graphql", `[]`},
		{"empty body", http.MethodPost, "application/json", "/graphql", ``},
		{"text/plain", http.MethodPost, "text/plain", "/graphql", `{"query":"{ __typename }"}`},
		{"no content type", http.MethodPost, "", "/graphql", `{"query":"{ __typename }"}`},
		{"multipart", http.MethodPost, "multipart/form-data; boundary=x", "/graphql", "--x\r\n\r\n--x--\r\n"},
		{"GET bad variables", http.MethodGet, "", "/graphql?query=%7B__typename%7D&variables=%7B", ``},
		{"GET bad escape", http.MethodGet, "", "/graphql?query=%7B__typename%7D&x=%", ``},
		{"APQ extension not an object", http.MethodPost, "application/json", "/graphql", `{"extensions":{"persistedQuery":""}}`},
		{"APQ version 2", http.MethodPost, "application/json", "/graphql", `{"extensions":{"persistedQuery":{"version":2,"sha256Hash":"00"}}}`},
		{"PUT", http.MethodPut, "application/json", "/graphql", `{"query":"{ __typename }"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, tc.target, strings.NewReader(tc.body))
			if tc.ctype != "" {
				req.Header.Set("Content-Type", tc.ctype)
			}
			req.Header.Set("x-api-key", a.APIKey)
			req.Header.Set("x-api-secret", a.APISecret)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if (rec.Code < 400 && !strings.HasPrefix(tc.name, "APQ")) || rec.Code >= 500 {
				t.Errorf("status %d, want 4xx", rec.Code)
			}
			var out struct {
				Errors []struct {
					Message    string         `json:"message"`
					Extensions map[string]any `json:"extensions"`
				} `json:"errors"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || len(out.Errors) == 0 {
				t.Fatalf("answer %q is not a GraphQL error: %v", rec.Body, err)
			}
			for _, e := range out.Errors {
				if code, _ := e.Extensions["code"].(string); code == "" {
					t.Errorf("status %d, error %q has no extensions.code", rec.Code, e.Message)
				}
				if len(tc.body) > 2 && strings.Contains(e.Message, tc.body) {
					t.Errorf("error %q echoes the request body", e.Message)
				}
			}
		})
	}
}

// fuzzRequest is the request FuzzHandler sends for mode: a POST with one
// of several content types (or none), or a GET with body as the query or
// as the whole query string.
func fuzzRequest(mode uint8, body []byte) *http.Request {
	var req *http.Request
	switch mode % 9 {
	case 5:
		req = httptest.NewRequest(http.MethodGet, "/graphql?"+url.Values{"query": {string(body)}}.Encode(), nil)
	case 6:
		req = httptest.NewRequest(http.MethodGet, "/graphql", nil)
		req.URL = &url.URL{Path: "/graphql", RawQuery: string(body)}
	default:
		req = httptest.NewRequest(http.MethodPost, "/graphql", bytes.NewReader(body))
		if ct := fuzzContentTypes[mode%9]; ct != "" {
			req.Header.Set("Content-Type", ct)
		}
	}
	return req
}

// fuzzContentTypes are the POST modes' content types ("": none).
var fuzzContentTypes = [9]string{
	0: "application/json",
	1: "application/graphql",
	2: "text/plain",
	4: "multipart/form-data; boundary=x",
	7: "application/x-www-form-urlencoded",
	8: "application/json; charset=\x00",
}

// FuzzHandler feeds arbitrary bodies, with several methods and content
// types, to the /graphql route (the edge, the loaders and the GraphQL
// server, as the gateway composes them) in front of the sandbox, as
// business A.
// Invariants: no panic and no INTERNAL_SERVER_ERROR; never a 5xx; the
// answer is a GraphQL response whose every error has an extensions.code;
// every REST call it causes is a GET of a documented route with one
// well-formed id segment and A's credentials; and no id of business B
// appears in the answer unless the caller sent it.
func FuzzHandler(f *testing.F) {
	sb, rc := sandboxREST(f, 16)
	biz := sb.Businesses()
	a, b := biz[0], biz[1]
	logs := &fzLogs{}
	h := newEdge(rc, edgeConfig{
		restCalls: 4,
		timeout:   5 * time.Second,
		logger:    slog.New(slog.NewTextHandler(logs, nil)),
		server:    graph.ServerConfig{Limits: admission.QueryLimits{MaxDepth: 15, MaxFields: 1000, MaxQueryLength: 32768}},
	})

	var bIDs []string
	for _, p := range sb.Payments(b.APIKey) {
		bIDs = append(bIDs, p.ID)
	}
	for _, l := range sb.PaymentLinks(b.APIKey) {
		bIDs = append(bIDs, l.ID)
	}
	for _, s := range sb.CheckoutSessions(b.APIKey) {
		bIDs = append(bIDs, s.Reference)
	}
	aPay := sb.Payments(a.APIKey)[0].ID
	aLink := sb.PaymentLinks(a.APIKey)[0].ID
	aRef := sb.CheckoutSessions(a.APIKey)[0].Reference

	seeds := []string{
		`{"query":"{ payments(first: 3) { edges { cursor node { id amount { amount paisa } } } pageInfo { hasNextPage endCursor } } }"}`,
		`{"query":"{ payment(id: \"` + aPay + `\") { id status customer { address } } }"}`,
		`{"query":"{ paymentLink(id: \"` + aLink + `\") { url amount { amount } maxUses expiresAt } }"}`,
		`{"query":"{ checkoutSession(id: \"` + aRef + `\") { sessionId metadata { key value } payment { id } } }"}`,
		`{"query":"{ nodes(ids: [\"` + aPay + `\", \"` + aLink + `\", \"pay_../x\", \"` + b.APIKey + `\"]) { id } }"}`,
		`{"query":"query($n: Int, $a: String) { payments(first: $n, after: $a, status: FAILED) { nodes { id } } }","variables":{"n":2,"a":"AQAB"}}`,
		`{"query":"{ payment(id: \"pay_%2e%2e%2fpayment-links\") { id } }"}`,
		`{"extensions":{"persistedQuery":{"version":1,"sha256Hash":"0000"}}}`,
		`{"query":"{ __schema { types { name } } }"}`,
		`{"query":"{ a: payments(first: 100) { nodes { id } } b: payments(first: 100) { nodes { id } } }"}`,
		`{"query":"{ payments(first: 2147483648) { nodes { id } } }"}`,
		`{"query":"query { ...A } fragment A on Query { ...A }"}`,
		`{"query":"{ payment(id: \"` + sb.Payments(b.APIKey)[0].ID + `\") { id } }"}`,
		`{"query":1}`, `{"query":"{"}`, `[]`, `null`, `{`, "", "\x00", `{"query":"{ payments { nodes { id } } }","operationName":"x"}`,
		`{"query":"mutation { x }"}`, `{"query":"subscription { x }"}`,
	}
	for _, s := range seeds {
		f.Add(uint8(0), []byte(s))
	}
	f.Add(uint8(5), []byte(`{ payments(first: 1) { nodes { id } } }`))
	f.Add(uint8(6), []byte(`query=%7B__typename%7D&variables=%7B`))
	f.Add(uint8(1), []byte(`{ __typename }`))
	f.Add(uint8(4), []byte("--x\r\nContent-Disposition: form-data; name=\"operations\"\r\n\r\n{}\r\n--x--\r\n"))
	f.Add(uint8(7), []byte(`query=%7B__typename%7D`))

	f.Fuzz(func(t *testing.T, mode uint8, body []byte) {
		sb.ResetCalls()
		req := fuzzRequest(mode, body)
		req.Header.Set("x-api-key", a.APIKey)
		req.Header.Set("x-api-secret", a.APISecret)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req = req.WithContext(ctx)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		resp := rec.Result()
		raw, _ := io.ReadAll(resp.Body)

		if l := logs.take(); strings.Contains(l, "panic") {
			t.Fatalf("mode %d body %q: the handler recovered a panic: %s", mode, body, l)
		}
		if resp.StatusCode >= 500 {
			t.Fatalf("mode %d body %q: status %d: %s", mode, body, resp.StatusCode, raw)
		}
		var out struct {
			Data   json.RawMessage `json:"data"`
			Errors []struct {
				Message    string         `json:"message"`
				Extensions map[string]any `json:"extensions"`
			} `json:"errors"`
		}
		if resp.StatusCode == http.StatusOK || len(raw) > 0 && raw[0] == '{' {
			if err := json.Unmarshal(raw, &out); err != nil {
				t.Fatalf("mode %d body %q: status %d, answer %q is not JSON: %v", mode, body, resp.StatusCode, raw, err)
			}
			if out.Data == nil && out.Errors == nil {
				t.Fatalf("mode %d body %q: answer %q has neither data nor errors", mode, body, raw)
			}
			for _, e := range out.Errors {
				code, _ := e.Extensions["code"].(string)
				if code == "" && fzKnownCodeless(e.Message) {
					continue // TestTransportErrorsCarryACode reports these
				}
				if code == "" {
					t.Fatalf("mode %d body %q: error without extensions.code: %q", mode, body, raw)
				}
				if code == errcode.Internal {
					t.Fatalf("mode %d body %q: internal error: %q", mode, body, raw)
				}
			}
		}
		for _, id := range bIDs {
			if strings.Contains(string(raw), id) && !bytes.Contains(body, []byte(id)) &&
				!strings.Contains(string(body), url.QueryEscape(id)) {
				t.Fatalf("mode %d body %q: answer shows business B's %s: %s", mode, body, id, raw)
			}
		}
		for _, c := range sb.Calls() {
			if c.Method != http.MethodGet || c.Route == "" || c.APIKey != a.APIKey || c.APISecret != a.APISecret {
				t.Fatalf("mode %d body %q: REST call %+v", mode, body, c)
			}
			if c.Route == sandbox.RoutePayments {
				continue
			}
			seg := c.EscapedPath[strings.LastIndexByte(c.EscapedPath, '/')+1:]
			if id, err := url.PathUnescape(seg); err != nil || !fzValidID(id) || strings.Count(c.EscapedPath, "/") != strings.Count(c.Route, "/") {
				t.Fatalf("mode %d body %q: REST call to %q: an id that is not a REST id reached the REST API", mode, body, c.EscapedPath)
			}
		}
	})
}
