package gqlhttp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"paygraph/graph/errcode"
	"strings"
	"testing"

	"paygraph/gqlhttp"
)

// refusal is the GraphQL-shaped body of a refusal.
type refusal struct {
	Errors []struct {
		Message    string            `json:"message"`
		Extensions map[string]string `json:"extensions"`
	} `json:"errors"`
}

// decodeRefusal fails unless rec holds one GraphQL error with a code, as
// JSON, and returns its code.
func decodeRefusal(t *testing.T, rec *httptest.ResponseRecorder) string {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); ct != "application/json; charset=utf-8" { // the GraphQL-over-HTTP spec: say the encoding
		t.Errorf("Content-Type %q", ct)
	}
	var out refusal
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || len(out.Errors) != 1 {
		t.Fatalf("status %d, body %q is not one GraphQL error: %v", rec.Code, rec.Body, err)
	}
	if out.Errors[0].Message == "" || out.Errors[0].Extensions["code"] == "" {
		t.Fatalf("error without message or code: %q", rec.Body)
	}
	return out.Errors[0].Extensions["code"]
}

// TestOnRefused: every refusal of the edge's middlewares below the hook
// is reported once, with the code answered; requests that pass are not
// reported; without a hook, refusals are answered all the same.
func TestOnRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		mw     func(http.Handler) http.Handler
		req    func() *http.Request
		status int
		code   string // "" passes
	}{
		{"body too large", gqlhttp.RequestSize(4), func() *http.Request {
			return httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader(`{"query":"{ __typename }"}`))
		}, http.StatusRequestEntityTooLarge, errcode.BadUserInput},
		{"wrong method", gqlhttp.Methods, func() *http.Request {
			return httptest.NewRequest(http.MethodDelete, "/graphql", nil)
		}, http.StatusMethodNotAllowed, errcode.BadUserInput},
		{"duplicated key", gqlhttp.SingleCredentials, func() *http.Request {
			r := httptest.NewRequest(http.MethodPost, "/graphql", nil)
			r.Header["X-Api-Key"] = []string{"k1", "k2"}
			return r
		}, http.StatusBadRequest, errcode.Unauthenticated},
		{"passes", gqlhttp.Methods, func() *http.Request {
			return httptest.NewRequest(http.MethodGet, "/graphql?query=%7B__typename%7D", nil)
		}, http.StatusNoContent, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
			var reported []string
			report := func(_ context.Context, code string) { reported = append(reported, code) }
			for _, hooked := range []bool{true, false} {
				h := tc.mw(next)
				if hooked {
					h = gqlhttp.OnRefused(report)(h)
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, tc.req())
				if rec.Code != tc.status {
					t.Fatalf("hooked %v: status %d, want %d: %s", hooked, rec.Code, tc.status, rec.Body)
				}
				if tc.code != "" {
					if got := decodeRefusal(t, rec); got != tc.code {
						t.Errorf("hooked %v: code %s, want %s", hooked, got, tc.code)
					}
				}
			}
			want := 0
			if tc.code != "" {
				want = 1
			}
			if len(reported) != want || want == 1 && reported[0] != tc.code {
				t.Errorf("reported %q, want %d report of %q", reported, want, tc.code)
			}
		})
	}
}
