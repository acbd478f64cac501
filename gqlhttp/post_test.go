package gqlhttp_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"paygraph/gqlhttp"
	"paygraph/graph"
)

// TestAddTransports: the server takes a JSON POST, a GET query and an
// OPTIONS request, and answers in JSON.
func TestAddTransports(t *testing.T) {
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
	if code := decodeRefusal(t, rec); code != graph.CodeBadUserInput {
		t.Errorf("code %s", code)
	}
}
