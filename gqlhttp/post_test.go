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
	"paygraph/graph"
)

// TestAddTransports: the server takes a JSON POST, a GET query and an
// OPTIONS request, and answers in JSON.
func TestAddTransports(t *testing.T) {
	t.Parallel()
	srv := graph.NewServer(graph.ServerConfig{})
	gqlhttp.AddTransports(srv, 0)
	h := graph.LoadersMiddleware(noREST{}, nil)(srv)
	for _, tc := range []struct {
		name, method, target, body string
		status                     int
	}{
		{"POST", http.MethodPost, "/graphql", `{"query":"{ __typename }"}`, http.StatusOK},
		{"GET", http.MethodGet, "/graphql?query=%7B__typename%7D", "", http.StatusOK},
		{"OPTIONS", http.MethodOptions, "/graphql", "", http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, tc.target, strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body)
			}
			if tc.method != http.MethodOptions && rec.Body.String() != `{"data":{"__typename":"Query"}}` {
				t.Errorf("answer %s", rec.Body)
			}
		})
	}
}

// TestPOSTBodyLongerThanAnnounced: a body that turns out longer than
// RequestSize allows, though announced within it, is a 413 with a code
// from the POST transport, not a JSON decoding error.
func TestPOSTBodyLongerThanAnnounced(t *testing.T) {
	t.Parallel()
	srv := graph.NewServer(graph.ServerConfig{})
	gqlhttp.AddTransports(srv, 0)
	h := gqlhttp.RequestSize(32)(srv)
	req := httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader(`{"query":"{ __typename }", "variables": {"pad": "`+strings.Repeat("x", 64)+`"}}`))
	req.Header.Set("Content-Type", "application/json")
	req.ContentLength = 10
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	if code := decodeRefusal(t, rec); code != errcode.BadUserInput {
		t.Errorf("code %s", code)
	}
}

// TestBatchRefused: a JSON array of operations (Apollo's BatchHttpLink) is
// refused with 400 and one answer per entry, each the refusal with its
// code (so a batching client hands every operation its error); in the
// media type Accept asks for; reported to OnRefused; with no REST call
// (noREST would panic). Past maxBatchAnswers entries, and for an array
// that is not JSON, one refusal; an object body is served as before.
func TestBatchRefused(t *testing.T) {
	t.Parallel()
	op := `{"query":"{ payments(first: 1) { nodes { id } } }"}`
	for _, tc := range []struct {
		name, body, accept string
		answers            int // 0: one refusal object
		wantType           string
	}{
		{"two entries", "[" + op + "," + op + "]", "", 2, "application/json"},
		{"blanks before the array", " \n\t[" + op + "]", "", 1, "application/json"},
		{"graphql-response+json", "[" + op + "," + op + "," + op + "]", "application/graphql-response+json", 3, "application/graphql-response+json"},
		{"over 100 entries", "[" + strings.Repeat(op+",", 100) + op + "]", "", 0, "application/json"},
		{"not JSON", "[" + op + ",", "", 0, "application/json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var refused []string
			h := newEdge(noREST{}, edgeConfig{onRefused: func(_ context.Context, code string) { refused = append(refused, code) }})
			req := httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Api-Key", "key_demo")
			req.Header.Set("X-Api-Secret", "secret_demo")
			if tc.accept != "" {
				req.Header.Set("Accept", tc.accept)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusBadRequest || !strings.HasPrefix(rec.Header().Get("Content-Type"), tc.wantType) {
				t.Fatalf("%d %q: %s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
			}
			type answer struct {
				Errors []struct {
					Message    string
					Extensions struct{ Code string }
				}
			}
			var answers []answer
			if tc.answers == 0 {
				var one answer
				if err := json.Unmarshal(rec.Body.Bytes(), &one); err != nil {
					t.Fatalf("not one answer: %v: %s", err, rec.Body)
				}
				answers = []answer{one}
			} else if err := json.Unmarshal(rec.Body.Bytes(), &answers); err != nil || len(answers) != tc.answers {
				t.Fatalf("want %d answers: %v: %s", tc.answers, err, rec.Body)
			}
			for i, a := range answers {
				if len(a.Errors) != 1 || a.Errors[0].Extensions.Code != errcode.BadUserInput {
					t.Errorf("answer %d: %+v", i, a)
				}
			}
			if tc.name != "not JSON" && !strings.Contains(answers[0].Errors[0].Message, "BatchHttpLink") {
				t.Errorf("message %q does not say what to use instead", answers[0].Errors[0].Message)
			}
			if len(refused) != 1 || refused[0] != errcode.BadUserInput {
				t.Errorf("reported %v; want one BAD_USER_INPUT", refused)
			}
		})
	}
}
