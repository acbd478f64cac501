package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// deferResults is what e2e/clients/defer.mjs prints: the Content-Type the
// gateway answered and every result Apollo Client handed the application.
type deferResults struct {
	ContentType, ContentEncoding string
	Results                      []struct {
		Data      map[string]any
		DataState string
		Errors    any
		Error     string
	}
}

// runDefer runs query through Apollo Client 4 with its @defer handler
// and the fetch policy ("": Apollo's default).
func runDefer(t *testing.T, p *proc, query, fetchPolicy string) deferResults {
	t.Helper()
	node, dir := nodeClients(t)
	out := runNode(t, node, dir, "defer.mjs", map[string]string{
		"GRAPHQL_URL": p.URL + "/graphql", "GRAPHQL_HEADERS": demoHeaders(t), "APOLLO_QUERY": query,
		"APOLLO_FETCH_POLICY": fetchPolicy})
	var got deferResults
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("defer.mjs output: %v: %s", err, out)
	}
	for _, r := range got.Results {
		if r.Errors != nil || r.Error != "" {
			t.Fatalf("Apollo Client reported errors: %s", out)
		}
	}
	if n := len(got.Results); n == 0 || got.Results[n-1].DataState != "complete" {
		t.Fatalf("no complete result: %s", out)
	}
	return got
}

// TestApolloClientDeferStreams: Apollo Client 4 (HttpLink with its
// Defer20220824Handler) runs a 50-item list whose customers' addresses
// are deferred (each is one REST retrieve) against the gateway process,
// in both forms: the issue's, the whole customer deferred (Payment.customer
// is bound to a method with a context for this: gqlgen defers only what it resolves
// concurrently), and the address alone. The gateway answers
// multipart/mixed, the application is handed the list first, every
// address still missing, then results as the addresses arrive, the last
// complete; its data is the undeferred query's. Under Apollo's defaults
// (InMemoryCache, fetch policy cache-first: what the documentation's
// snippet gets) as under no-cache: a deferred field left null in the first
// part, rather than absent, made the cache report that part "complete".
func TestApolloClientDeferStreams(t *testing.T) {
	t.Parallel()
	p := startGateway(t, nil)
	const plain = `query Deferred { payments(first: 50) { nodes { id status customer { address } } } }`
	want := runDefer(t, p, plain, "no-cache")
	if len(want.Results) != 1 || strings.HasPrefix(want.ContentType, "multipart/") {
		t.Errorf("the undeferred query: %d results, %q; want one JSON payload", len(want.Results), want.ContentType)
	}
	for _, tc := range []struct{ name, query, policy string }{
		{"customer_deferred_default_cache", `query Deferred { payments(first: 50) { nodes { id status ... @defer { customer { address } } } } }`, ""},
		{"address_deferred_default_cache", `query Deferred { payments(first: 50) { nodes { id status customer { ... @defer { address } } } } }`, ""},
		{"address_deferred_no_cache", `query Deferred { payments(first: 50) { nodes { id status customer { ... @defer { address } } } } }`, "no-cache"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := runDefer(t, p, tc.query, tc.policy)
			if !strings.HasPrefix(got.ContentType, "multipart/mixed") {
				t.Fatalf("Content-Type %q; want multipart/mixed", got.ContentType)
			}
			if len(got.Results) < 2 {
				t.Fatalf("%d results; want the list first, then the addresses", len(got.Results))
			}
			first := got.Results[0]
			nodes := first.Data["payments"].(map[string]any)["nodes"].([]any)
			if first.DataState != "streaming" || len(nodes) != 50 {
				t.Fatalf("first result: %s with %d items; want streaming, 50", first.DataState, len(nodes))
			}
			for i, n := range nodes {
				node := n.(map[string]any)
				if node["id"] == nil || node["status"] == nil {
					t.Errorf("first result, item %d: %v; want its id and status", i, node)
				}
				if c, _ := node["customer"].(map[string]any); c != nil && c["address"] != nil {
					t.Errorf("first result, item %d: address %v already there", i, c["address"])
				}
			}
			final := got.Results[len(got.Results)-1].Data
			if diff := cmp.Diff(want.Results[0].Data, final); diff != "" {
				t.Errorf("final data differs from the undeferred query's (-want +got):\n%s", diff)
			}
			t.Logf("%d results: the list, then %d with addresses (Content-Encoding %q)", len(got.Results), len(got.Results)-1, got.ContentEncoding)
		})
	}
}

// urqlResults is what e2e/clients/urql.mjs prints.
type urqlResults struct {
	Method, ContentType string
	Results             []struct {
		Data    map[string]any
		HasNext bool
		Error   string
	}
}

func runURQL(t *testing.T, p *proc, query string) urqlResults {
	t.Helper()
	node, dir := nodeClients(t)
	out := runNode(t, node, dir, "urql.mjs", map[string]string{
		"GRAPHQL_URL": p.URL + "/graphql", "GRAPHQL_HEADERS": demoHeaders(t), "URQL_QUERY": query})
	var got urqlResults
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("urql.mjs output: %v: %s", err, out)
	}
	for _, r := range got.Results {
		if r.Error != "" {
			t.Fatalf("urql reported an error: %s", out)
		}
	}
	if n := len(got.Results); n == 0 || got.Results[n-1].HasNext {
		t.Fatalf("no last result: %s", out)
	}
	return got
}

// TestURQLDeferStreams: urql with its defaults (GET for a query, an
// Accept that names JSON, text/event-stream and multipart/mixed) gets the
// undeferred query as one JSON payload, not an event stream, and the
// deferred one in parts: the list first, every address missing, then
// the rest, the final data the undeferred query's.
func TestURQLDeferStreams(t *testing.T) {
	t.Parallel()
	p := startGateway(t, nil)
	plain := runURQL(t, p, `query Plain { payments(first: 50) { nodes { id status customer { address } } } }`)
	if plain.Method != "GET" || !strings.HasPrefix(plain.ContentType, "application/graphql-response+json") || len(plain.Results) != 1 {
		t.Fatalf("undeferred: %s, %q, %d results; want GET, application/graphql-response+json, one", plain.Method, plain.ContentType, len(plain.Results))
	}
	got := runURQL(t, p, `query Deferred { payments(first: 50) { nodes { id status customer { ... @defer { address } } } } }`)
	if !strings.HasPrefix(got.ContentType, "multipart/mixed") || len(got.Results) < 2 {
		t.Fatalf("deferred: %q, %d results; want multipart/mixed, two or more", got.ContentType, len(got.Results))
	}
	for i, n := range got.Results[0].Data["payments"].(map[string]any)["nodes"].([]any) {
		if a := n.(map[string]any)["customer"].(map[string]any)["address"]; a != nil {
			t.Errorf("first result, item %d: address %v already there", i, a)
		}
	}
	if diff := cmp.Diff(plain.Results[0].Data, got.Results[len(got.Results)-1].Data); diff != "" {
		t.Errorf("final data differs from the undeferred query's (-want +got):\n%s", diff)
	}
	t.Logf("urql: %d results over %s", len(got.Results), got.Method)
}
