package graph_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"paygraph/graph/errcode"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"paygraph/graph"
	"paygraph/graph/admission"
	"paygraph/internal/gqltest"
	"paygraph/internal/testenv"
	"paygraph/restclient"
	"paygraph/sandbox"
)

// newServerRig is the GraphQL server with gqlgen's own POST and GET
// transports (the edge's are gqlhttp's) in front of the sandbox, both in
// process: REST calls time out after restTimeout, at most 16 in flight and
// 4 per request; a timeout above zero is every request's deadline (the
// edge's gqlhttp.Deadline, here). Tests speak to it with gqltest.
func newServerRig(tb testing.TB, restTimeout, timeout time.Duration) *graph.Rig {
	tb.Helper()
	return graph.NewRig(tb, graph.RigConfig{
		Server:       graph.ServerConfig{Limits: admission.QueryLimits{MaxDepth: 15, MaxFields: 1000, MaxQueryLength: 32768}},
		RESTConfig:   restclient.Config{Timeout: restTimeout, Limiter: restclient.NewLimiter(restclient.LimiterConfig{MaxInFlight: 16})},
		RequestLimit: 4,
		Deadline:     timeout,
	})
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

// FuzzServer feeds arbitrary query texts, as POST and as GET, to the
// GraphQL server in front of the sandbox, as business A. Invariants: no
// panic and no INTERNAL_SERVER_ERROR; never a 5xx; every error the
// server presents has an extensions.code; every REST call it causes is a
// GET of a documented route with one well-formed id segment and A's
// credentials; and no id of business B appears in the answer unless the
// caller sent it. (What reaches the server through the HTTP edge, bodies
// and methods of every kind, gqlhttp's FuzzHandler covers.)
func FuzzServer(f *testing.F) {
	r := newServerRig(f, 0, 5*time.Second)
	biz := r.Sandbox.Businesses()
	a, b := biz[0], biz[1]
	var bIDs []string
	for _, p := range r.Sandbox.Payments(b.APIKey) {
		bIDs = append(bIDs, p.ID)
	}
	for _, l := range r.Sandbox.PaymentLinks(b.APIKey) {
		bIDs = append(bIDs, l.ID)
	}
	for _, s := range r.Sandbox.CheckoutSessions(b.APIKey) {
		bIDs = append(bIDs, s.Reference)
	}
	aPay := r.Sandbox.Payments(a.APIKey)[0].ID
	aLink := r.Sandbox.PaymentLinks(a.APIKey)[0].ID
	aRef := r.Sandbox.CheckoutSessions(a.APIKey)[0].Reference
	for _, q := range []string{
		`{ payments(first: 3) { edges { cursor node { id amount { amount paisa } } } pageInfo { hasNextPage endCursor } } }`,
		`{ payment(id: "` + aPay + `") { id status customer { address } } }`,
		`{ paymentLink(id: "` + aLink + `") { url amount { amount } maxUses expiresAt } }`,
		`{ checkoutSession(id: "` + aRef + `") { sessionId metadata { key value } payment { id } } }`,
		`{ nodes(ids: ["` + aPay + `", "` + aLink + `", "pay_../x", "` + b.APIKey + `"]) { id } }`,
		`query { payments(first: 2, after: "AQAB", status: FAILED) { nodes { id } } }`,
		`{ payment(id: "pay_%2e%2e%2fpayment-links") { id } }`,
		`{ __schema { types { name } } }`,
		`{ a: payments(first: 100) { nodes { id } } b: payments(first: 100) { nodes { id } } }`,
		`{ payments(first: 2147483648) { nodes { id } } }`,
		`query { ...A } fragment A on Query { ...A }`,
		`{ payment(id: "` + r.Sandbox.Payments(b.APIKey)[0].ID + `") { id } }`,
		`{`, ``, "\x00", `mutation { x }`, `subscription { x }`,
	} {
		f.Add(false, q)
		f.Add(true, q)
	}
	creds, client := gqltest.Headers(a.APIKey, a.APISecret), r.Client()
	f.Fuzz(func(t *testing.T, get bool, query string) {
		r.Sandbox.ResetCalls()
		var resp *gqltest.Response
		if get {
			resp = client.Do(t, http.MethodGet, "/graphql?"+url.Values{"query": {query}}.Encode(), creds, nil)
		} else {
			body, _ := json.Marshal(map[string]string{"query": query})
			resp = client.Do(t, http.MethodPost, "/graphql", creds, body)
		}
		if l := r.Logs.String(); strings.Contains(l, "panic") {
			t.Fatalf("get %v query %q: the server recovered a panic: %s", get, query, l)
		}
		if resp.Status >= 500 {
			t.Fatalf("get %v query %q: status %d: %s", get, query, resp.Status, resp.Raw)
		}
		if err := json.Unmarshal(resp.Raw, resp); err != nil {
			t.Fatalf("get %v query %q: status %d, answer %q is not JSON: %v", get, query, resp.Status, resp.Raw, err)
		}
		if resp.Data == nil && resp.Errors == nil {
			t.Fatalf("get %v query %q: answer %q has neither data nor errors", get, query, resp.Raw)
		}
		for _, e := range resp.Errors {
			switch e.Code() {
			case "":
				t.Fatalf("get %v query %q: error without extensions.code: %q", get, query, resp.Raw)
			case errcode.Internal:
				t.Fatalf("get %v query %q: internal error: %q", get, query, resp.Raw)
			}
		}
		for _, id := range bIDs {
			if bytes.Contains(resp.Raw, []byte(id)) && !strings.Contains(query, id) {
				t.Fatalf("get %v query %q: answer shows business B's %s: %s", get, query, id, resp.Raw)
			}
		}
		for _, c := range r.Sandbox.Calls() {
			if c.Method != http.MethodGet || c.Route == "" || c.APIKey != a.APIKey || c.APISecret != a.APISecret {
				t.Fatalf("get %v query %q: REST call %+v", get, query, c)
			}
			if c.Route == sandbox.RoutePayments {
				continue
			}
			seg := c.EscapedPath[strings.LastIndexByte(c.EscapedPath, '/')+1:]
			if id, err := url.PathUnescape(seg); err != nil || !fzValidID(id) || strings.Count(c.EscapedPath, "/") != strings.Count(c.Route, "/") {
				t.Fatalf("get %v query %q: REST call to %q: an id that is not a REST id reached the REST API", get, query, c.EscapedPath)
			}
		}
	})
}

// TestServerLeavesNoGoroutines: requests that fan out (nodes, sessions
// with their payment, lists) and requests cut short by the request
// deadline leave no goroutine behind once answered. The server runs in a
// synctest bubble: the sandbox's latency and the deadlines are on its
// fake clock, and synctest.Wait lets every goroutine that is going to
// end, end.
func TestServerLeavesNoGoroutines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newServerRig(t, time.Second, 200*time.Millisecond)
		a := r.Sandbox.Businesses()[0]
		var ids []string
		for _, p := range r.Sandbox.Payments(a.APIKey)[:40] {
			ids = append(ids, `"`+p.ID+`"`)
		}
		ref := r.Sandbox.CheckoutSessions(a.APIKey)[0].Reference
		queries := []string{
			`{ nodes(ids: [` + strings.Join(ids, ",") + `]) { id ... on Payment { customer { address } } } }`,
			`{ checkoutSession(id: "` + ref + `") { payment { id customer { address } } } payments(first: 30) { nodes { customer { address } } } }`,
		}
		creds, client := gqltest.Headers(a.APIKey, a.APISecret), r.Client()
		// The bubble's own goroutines: the process's count holds other
		// tests' too, which come and go.
		base := testenv.BubbleGoroutines()
		run := func() {
			var wg sync.WaitGroup
			for i := range 20 {
				wg.Go(func() { client.Post(t, creds, queries[i%len(queries)], nil) })
			}
			wg.Wait()
		}
		run()
		r.Sandbox.SetLatency(300 * time.Millisecond) // every request now hits its 200ms deadline
		start := time.Now()
		run()
		if took := time.Since(start); took != 200*time.Millisecond {
			t.Fatalf("the requests took %s on the bubble's clock, want their 200ms deadline", took)
		}
		synctest.Wait()
		if n := testenv.BubbleGoroutines(); n > base {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines before, %d after:\n%s", base, n, buf[:runtime.Stack(buf, true)])
		}
	})
}
