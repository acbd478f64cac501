package gateway_test

import (
	"fmt"
	"net/http"
	"path"
	"paygraph/gateway"
	"strings"
	"sync/atomic"
	"testing"

	"paygraph/restclient"
	"paygraph/sandbox"
)

// TestUpstreamBreakerIsolation (issue 11, item 6) through the whole
// gateway: merchant A sends queries of six payment(id:) aliases whose ids
// the REST API answers 500, until A's circuit opens (A's calls then fail
// with UPSTREAM_ERROR and no REST call); merchant B's single-payment
// queries, before, after and while A is shed, all answer and all reach
// the REST API. Before, A's sixth alias opened the process-wide breaker
// and B got "REST API unavailable (circuit open)" for 5 s.
func TestUpstreamBreakerIsolation(t *testing.T) {
	const good = "pay_prod_0123456789abcdef0123456789abcdef"
	keyA, keyB := "ak_test_merchantA", "ak_test_merchantB"
	var callsA, callsB atomic.Int64
	rest := &countingREST{handle: func(w http.ResponseWriter, r *http.Request) {
		switch r.Header.Get("x-api-key") {
		case keyA:
			callsA.Add(1)
		case keyB:
			callsB.Add(1)
		}
		id := path.Base(r.URL.Path)
		if strings.HasPrefix(id, "pay_prod_dead") {
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(`{"error":"Internal server error"}`))
			return
		}
		_, _ = w.Write([]byte(strings.Replace(paymentJSON("1.00", "2026-11-21T09:30:00.000Z"), good, id, 1)))
	}}
	g := startGateway(t, setup{env: map[string]string{"REST_MAX_RETRIES": "0"}, rest: rest}) // default BREAKER_FAILURES 5
	a := creds(sandbox.Business{APIKey: keyA, APISecret: "sk_test_secretA"})
	b := creds(sandbox.Business{APIKey: keyB, APISecret: "sk_test_secretB"})
	single := `{ payment(id: "` + good + `") { id } }`
	var poisoned strings.Builder
	poisoned.WriteString("{")
	for i := range 6 {
		fmt.Fprintf(&poisoned, ` p%d: payment(id: "pay_prod_dead%027d") { id }`, i, i)
	}
	poisoned.WriteString(" }")

	wantB := int64(0)
	queryB := func(step string) {
		t.Helper()
		wantB++
		g.Post(t, b, single, nil).WantNoErrors(t)
		if got := callsB.Load(); got != wantB {
			t.Fatalf("%s: B sent %d queries, the REST API saw %d calls", step, wantB, got)
		}
	}
	g.Post(t, a, single, nil).WantNoErrors(t) // A is a real merchant
	queryB("before")
	g.Post(t, a, poisoned.String(), nil).WantCode(t, "UPSTREAM_ERROR")
	queryB("after A's first poisoned query")
	before := callsA.Load()
	for range 3 {
		r := g.Post(t, a, poisoned.String(), nil)
		if e := r.WantCode(t, "UPSTREAM_ERROR"); !strings.Contains(e.Message, "circuit open") {
			t.Fatalf("A while shed: %q", e.Message)
		}
		queryB("while A is shed")
	}
	if n := callsA.Load() - before; n != 0 {
		t.Errorf("A's shed queries made %d REST calls", n)
	}
}

// TestUpstreamBodyCaps (issue 11, item 7): REST_MAX_BODY_BYTES and
// the page cap (Config.RESTMaxPage) reach the REST client: a record or a page one byte
// over its configured cap is UPSTREAM_ERROR naming the cap; at the cap it
// is served.
func TestUpstreamBodyCaps(t *testing.T) {
	t.Parallel()
	const id = "pay_prod_0123456789abcdef0123456789abcdef"
	record := paymentJSON("1.00", "2026-11-21T09:30:00.000Z")
	page := `{"data":[` + strings.Replace(record, `"address":"Dhaka",`, "", 1) + `],"has_more":false,"next_cursor":null}`
	for _, tc := range []struct {
		name, body, query, want string
		limit                   int
		pad                     int // bytes beyond the limit
	}{
		{"record at its cap", record, `{ payment(id: "` + id + `") { id } }`, "", 2048, 0},
		{"record over its cap", record, `{ payment(id: "` + id + `") { id } }`, "a body larger than the limit of 2048 bytes for one record", 2048, 1},
		{"page at its cap", page, `{ payments(first: 1) { nodes { id } } }`, "", 4096, 0},
		{"page over its cap", page, `{ payments(first: 1) { nodes { id } } }`, "a body larger than the limit of 4096 bytes for a list page", 4096, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := tc.body + strings.Repeat(" ", tc.limit+tc.pad-len(tc.body))
			rest := &countingREST{handle: func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(body)) }}
			g := startGateway(t, setup{env: map[string]string{"REST_MAX_BODY_BYTES": "2048", "Config.RESTMaxPage": "4096"}, rest: rest})
			r := g.Post(t, anyCreds, tc.query, nil)
			if tc.want == "" {
				r.WantNoErrors(t)
			} else if e := r.WantCode(t, "UPSTREAM_ERROR"); !strings.Contains(e.Message, tc.want) {
				t.Errorf("message %q, want %q", e.Message, tc.want)
			}
			if n := rest.calls.Load(); n != 1 {
				t.Errorf("%d REST calls, want 1", n)
			}
		})
	}
}

// TestRESTBodyCapSettings: the two caps' defaults are restclient's, and
// values outside 1 KiB..256 MiB are refused at start.
func TestRESTBodyCapSettings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		env        map[string]string
		body, page int64
		wantErr    bool
	}{
		{"defaults", nil, restclient.DefaultMaxBodyBytes, restclient.DefaultMaxPageBytes, false},
		{"set: the page cap 16 times it", map[string]string{"REST_MAX_BODY_BYTES": "4096"}, 4096, 65536, false},
		{"record cap too small", map[string]string{"REST_MAX_BODY_BYTES": "100"}, 0, 0, true},
		{"record cap not a number", map[string]string{"REST_MAX_BODY_BYTES": "1MiB"}, 0, 0, true},
		{"record cap too large", map[string]string{"REST_MAX_BODY_BYTES": "1073741824"}, 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := gateway.LoadConfig(nil, func(k string) string { return tc.env[k] }, nil)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("accepted: %d, %d", c.RESTMaxBody, c.RESTMaxPage)
				}
				return
			}
			if err != nil || c.RESTMaxBody != tc.body || c.RESTMaxPage != tc.page {
				t.Errorf("got %d, %d, %v; want %d, %d", c.RESTMaxBody, c.RESTMaxPage, err, tc.body, tc.page)
			}
		})
	}
}
