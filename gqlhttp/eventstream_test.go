package gqlhttp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"paygraph/gqlhttp"
	"paygraph/graph"
)

// TestEventStreamOnlyWhenAskedAlone: the SSE transport takes a POST whose
// Accept asks for the event stream alone (graphql-sse's clients, urql's
// subscriptions); urql's queries, which name text/event-stream beside the
// JSON types, by POST or by GET (its default for queries), are answered
// as any client's, in JSON, and keep the request's deadline.
func TestEventStreamOnlyWhenAskedAlone(t *testing.T) {
	t.Parallel()
	const urqlQuery = "application/graphql-response+json, application/graphql+json, application/json, text/event-stream, multipart/mixed"
	for _, tt := range []struct {
		name, method, accept string
		wantType             string
		wantDeadline         bool
	}{
		{"graphql-sse client", http.MethodPost, "text/event-stream", "text/event-stream", false},
		{"urql subscription", http.MethodPost, "text/event-stream, multipart/mixed", "text/event-stream", false},
		{"urql query over POST", http.MethodPost, urqlQuery, ctGR, true},
		{"urql query over GET", http.MethodGet, urqlQuery, ctGR, true},
		{"event stream refused by q=0", http.MethodPost, "text/event-stream;q=0, application/json", ctJSON, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := graph.NewServer(graph.ServerConfig{})
			gqlhttp.AddTransports(srv, 0, gqlhttp.Live{})
			var hadDeadline bool
			probe := func(next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					_, hadDeadline = r.Context().Deadline()
					next.ServeHTTP(w, r)
				})
			}
			h := gqlhttp.Methods(gqlhttp.Deadline(60e9, 0)(probe(graph.LoadersMiddleware(noREST{}, nil)(srv))))
			var req *http.Request
			if tt.method == http.MethodPost {
				body, _ := json.Marshal(map[string]any{"query": "{ __typename }"})
				req = httptest.NewRequest(tt.method, "/graphql", strings.NewReader(string(body)))
				req.Header.Set("Content-Type", "application/json")
			} else {
				req = httptest.NewRequest(tt.method, "/graphql?query="+url.QueryEscape("{ __typename }"), nil)
			}
			req.Header.Set("Accept", tt.accept)
			ctx, cancel := context.WithCancel(req.Context())
			defer cancel()
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req.WithContext(ctx))
			if got := rec.Header().Get("Content-Type"); !strings.HasPrefix(got, tt.wantType) || rec.Code != http.StatusOK {
				t.Errorf("status %d, Content-Type %q; want 200, %q: %s", rec.Code, got, tt.wantType, rec.Body)
			}
			if hadDeadline != tt.wantDeadline {
				t.Errorf("deadline %v, want %v", hadDeadline, tt.wantDeadline)
			}
		})
	}
}
