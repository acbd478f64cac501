package gateway_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"paygraph/gateway"
	"paygraph/internal/gqltest"
	"paygraph/internal/testenv"
	"paygraph/sandbox"
)

// The documents of the tests' manifest.
const (
	listedID   = "listed-payments"
	listedBody = "query ListedPayments { payments(first: 2) { nodes { id } } }"
	otherID    = "listed-links"
	otherBody  = "query ListedLinks { payments(first: 1) { nodes { status } } }"
	unlisted   = "query Unlisted { payments(first: 3) { nodes { id } } }"
	unlisted2  = "query UnlistedAPQ { payments(first: 1) { nodes { id } } }"
	introspect = "{ __schema { queryType { name } } }"
)

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// writeManifest writes an Apollo persisted query manifest of docs (id ->
// body) at path, atomically (a rename, as a ConfigMap's update is).
func writeManifest(t testing.TB, path string, docs map[string]string) {
	t.Helper()
	m := map[string]any{"format": "apollo-persisted-query-manifest", "version": 1}
	var ops []map[string]string
	for id, body := range docs {
		ops = append(ops, map[string]string{"id": id, "body": body, "type": "query"})
	}
	m["operations"] = ops
	b, _ := json.Marshal(m)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// trustedRequest is one way of asking for a document.
type trustedRequest struct {
	name       string
	query      string // the query member ("" none)
	hash       string // extensions.persistedQuery.sha256Hash ("" none)
	documentID string
}

func (r trustedRequest) send(t *testing.T, c gqltest.Client, h http.Header, get bool) *gqltest.Response {
	t.Helper()
	var ext map[string]any
	if r.hash != "" {
		ext = map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": r.hash}}
	}
	if get {
		p := url.Values{}
		if ext != nil {
			b, _ := json.Marshal(ext)
			p.Set("extensions", string(b))
		}
		if r.documentID != "" {
			p.Set("documentId", r.documentID)
		}
		return c.Get(t, h, r.query, p)
	}
	body := map[string]any{}
	if r.query != "" {
		body["query"] = r.query
	}
	if ext != nil {
		body["extensions"] = ext
	}
	if r.documentID != "" {
		body["documentId"] = r.documentID
	}
	return c.PostBody(t, h, body)
}

// TestTrustedDocumentsModes asks for listed and unlisted documents in every
// way (hash, documentId, text, APQ registration, introspection) over POST
// and GET, in each mode; a refusal makes no REST call.
func TestTrustedDocumentsModes(t *testing.T) {
	t.Parallel()
	requests := []trustedRequest{
		{name: "listed by APQ hash", hash: sha(listedBody)},
		{name: "listed by documentId", documentID: listedID},
		{name: "listed by sha256 documentId", documentID: "sha256:" + sha(listedBody)},
		{name: "listed text", query: listedBody},
		{name: "unlisted text", query: unlisted},
		{name: "APQ registration of an unlisted document", query: unlisted2, hash: sha(unlisted2)},
		{name: "unknown documentId", documentID: "not-in-the-manifest"},
		{name: "introspection", query: introspect},
	}
	const ok, notListed, notFound = "", "PERSISTED_QUERY_NOT_LISTED", "PERSISTED_QUERY_NOT_FOUND"
	modes := []struct {
		name string
		env  map[string]string
		want []string // per request, "" served
	}{
		{"off", map[string]string{"TRUSTED_DOCUMENTS_MODE": "off"},
			[]string{notFound, notFound, notFound, ok, ok, ok, notFound, ok}},
		{"allow", map[string]string{"TRUSTED_DOCUMENTS_MODE": "allow"},
			[]string{ok, ok, ok, ok, ok, ok, notFound, ok}},
		{"enforce", map[string]string{"TRUSTED_DOCUMENTS_MODE": "enforce"},
			[]string{ok, ok, ok, ok, notListed, notListed, notListed, notListed}},
		{"enforce with introspection", map[string]string{"TRUSTED_DOCUMENTS_MODE": "enforce", "TRUSTED_DOCUMENTS_INTROSPECTION": "true"},
			[]string{ok, ok, ok, ok, notListed, notListed, notListed, ok}},
	}
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "manifest.json")
			writeManifest(t, path, map[string]string{listedID: listedBody, otherID: otherBody})
			mode.env["TRUSTED_DOCUMENTS"] = path
			logs := new(testenv.LockedBuffer)
			g := startGateway(t, setup{env: mode.env, logger: slog.New(slog.NewJSONHandler(logs, nil))})
			c := gqltest.Client{URL: g.URL, Forbidden: []string{g.Biz[0].APISecret}}
			h := gqltest.Headers(g.Biz[0].APIKey, g.Biz[0].APISecret)
			for _, get := range []bool{false, true} {
				method := "POST"
				if get {
					method = "GET"
				}
				for i, req := range requests {
					t.Run(method+" "+req.name, func(t *testing.T) {
						g.Sandbox.ResetCalls()
						r := req.send(t, c, h, get)
						if mode.want[i] == ok {
							r.WantNoErrors(t)
							return
						}
						r.WantCode(t, mode.want[i])
						if n := g.Sandbox.CallCount(""); n != 0 {
							t.Fatalf("refused, yet %d REST calls", n)
						}
					})
				}
			}
			if mode.name != "allow" {
				return
			}
			t.Run("unlisted documents counted and logged by hash, never by text", func(t *testing.T) {
				m := string(c.Do(t, http.MethodGet, "/metrics", nil, nil).Raw)
				// unlisted text, the APQ registration and introspection, each
				// over POST and GET.
				if !strings.Contains(m, `paygraph_trusted_documents_total{outcome="unlisted"} 6`) {
					t.Fatalf("unlisted not counted:\n%s", linesWith(m, "paygraph_trusted_documents"))
				}
				out := logs.String()
				for _, s := range []string{sha(unlisted), sha(unlisted2)} {
					if strings.Count(out, s) != 1 {
						t.Fatalf("hash %s logged %d times, want once (first sighting):\n%s", s, strings.Count(out, s), out)
					}
				}
				if strings.Contains(out, "Unlisted {") || strings.Contains(out, "UnlistedAPQ {") {
					t.Fatalf("a document's text is in the log:\n%s", out)
				}
			})
		})
	}
}

// TestTrustedDocumentsOverSSE: a graphql-sse stream takes a listed
// subscription by its documentId, as POST does, under enforce; an unlisted
// subscription's text is refused before any REST call.
func TestTrustedDocumentsOverSSE(t *testing.T) {
	t.Parallel()
	const watch = "subscription Watch($id: ID!) { paymentUpdated(id: $id) { id status } }"
	path := filepath.Join(t.TempDir(), "manifest.json")
	writeManifest(t, path, map[string]string{"watch-payment": watch, listedID: listedBody})
	g := startGateway(t, setup{env: fastPolls(map[string]string{"TRUSTED_DOCUMENTS": path, "TRUSTED_DOCUMENTS_MODE": "enforce"})})
	b := g.Biz[0]
	id := pendingPayment(t, g.Sandbox, b, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, tc := range []struct {
		name    string
		request map[string]any
		code    string // "" : served
	}{
		// The refusals first: a listed case's subscription stays open (and
		// its poller polls) until the test ends, which the refusals' count
		// of REST calls would see.
		{"unlisted text", map[string]any{"query": paymentSub, "variables": map[string]any{"id": id}}, "PERSISTED_QUERY_NOT_LISTED"},
		{"unknown documentId", map[string]any{"documentId": "not-listed", "variables": map[string]any{"id": id}}, "PERSISTED_QUERY_NOT_LISTED"},
		{"listed, by documentId", map[string]any{"documentId": "watch-payment", "variables": map[string]any{"id": id}}, ""},
		{"listed, by sha256 documentId", map[string]any{"documentId": "sha256:" + sha(watch), "variables": map[string]any{"id": id}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g.Sandbox.ResetCalls()
			ev := next(t, sseSubscribeBody(t, ctx, g.URL, creds(b), tc.request))
			if tc.code == "" {
				if ev.status() != "PENDING" {
					t.Fatalf("first event %+v, want the payment PENDING", ev)
				}
				return
			}
			if ev.code() != tc.code {
				t.Fatalf("first event %+v, want %s", ev, tc.code)
			}
			if n := g.Sandbox.CallCount(""); n != 0 {
				t.Errorf("refused, yet %d REST calls", n)
			}
		})
	}
}

// TestTrustedDocumentsReload: the manifest is swapped while requests for a
// listed document run; none of them fails, a document added by the new
// manifest is served after it, and a broken file keeps the last good set.
func TestTrustedDocumentsReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "manifest.json")
	writeManifest(t, path, map[string]string{listedID: listedBody})
	sb := sandbox.New(sandbox.Options{})
	biz := sb.Businesses()[0]
	rest := httptest.NewServer(sb)
	t.Cleanup(rest.Close)
	env := map[string]string{"TRUSTED_DOCUMENTS": path, "TRUSTED_DOCUMENTS_MODE": "enforce", "RATE_LIMIT_REQUESTS_PER_SECOND": "0", "RATE_LIMIT_REST_CALLS_PER_SECOND": "0"}
	cfg, err := gateway.LoadConfig(nil, func(k string) string { return env[k] }, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RESTBaseURL = rest.URL
	gw, err := gateway.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close() })
	srv := httptest.NewServer(gw)
	t.Cleanup(srv.Close)
	c := gqltest.Client{URL: srv.URL, Forbidden: []string{biz.APISecret}}
	h := gqltest.Headers(biz.APIKey, biz.APISecret)
	byID := func(id string) trustedRequest { return trustedRequest{name: id, documentID: id} }

	byID(otherID).send(t, c, h, false).WantCode(t, "PERSISTED_QUERY_NOT_LISTED")

	// Clients ask for the listed document without a pause while the
	// manifest is rewritten and reloaded 100 times.
	const clients = 4
	var (
		wg       sync.WaitGroup
		stop     atomic.Bool
		served   atomic.Int64
		failures = make(chan string, clients)
	)
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				r := byID(listedID).send(t, c, h, false)
				if len(r.Errors) > 0 || r.Status != http.StatusOK {
					failures <- fmt.Sprintf("status %d, errors %+v", r.Status, r.Errors)
					return
				}
				served.Add(1)
			}
		}()
	}
	for i := range 100 {
		docs := map[string]string{listedID: listedBody}
		if i%2 == 1 || i == 99 {
			docs[otherID] = otherBody
		}
		writeManifest(t, path, docs)
		if err := gw.Reload(); err != nil {
			t.Fatalf("reload %d: %v", i, err)
		}
	}
	stop.Store(true)
	wg.Wait()
	close(failures)
	for f := range failures {
		t.Fatalf("a request for a document listed in every manifest failed during the reloads: %s", f)
	}
	if served.Load() == 0 {
		t.Fatal("no request was served during the reloads")
	}
	t.Logf("%d requests served during 100 reloads", served.Load())
	byID(otherID).send(t, c, h, false).WantNoErrors(t)

	// A truncated file: the reload fails, the last good manifest stays.
	if err := os.WriteFile(path, []byte(`{"format":"apollo-persisted-query-manifest","version":1,"operations":[{"id"`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := gw.Reload(); err == nil {
		t.Fatal("a truncated manifest reloaded without an error")
	}
	byID(otherID).send(t, c, h, false).WantNoErrors(t)
	byID(listedID).send(t, c, h, true).WantNoErrors(t)
}

// TestPrintManifest: `paygraph -manifest` output, loaded as
// TRUSTED_DOCUMENTS in enforce mode, serves its operation by id.
func TestPrintManifest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "ops.graphql")
	if err := os.WriteFile(src, []byte("query Page { payments(first: 2) { nodes { ...F } } }\nfragment F on Payment { id status }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut strings.Builder
	if code := gateway.PrintManifest(&out, &errOut, []string{src}); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var m struct{ Operations []struct{ ID, Name string } }
	if err := json.Unmarshal([]byte(out.String()), &m); err != nil || len(m.Operations) != 1 || m.Operations[0].Name != "Page" {
		t.Fatalf("manifest %s (%v)", out.String(), err)
	}
	path := filepath.Join(dir, "manifest.json")
	if err := os.WriteFile(path, []byte(out.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, setup{env: map[string]string{"TRUSTED_DOCUMENTS": path, "TRUSTED_DOCUMENTS_MODE": "enforce"}})
	c := gqltest.Client{URL: g.URL, Forbidden: []string{g.Biz[0].APISecret}}
	h := gqltest.Headers(g.Biz[0].APIKey, g.Biz[0].APISecret)
	var d struct {
		Payments struct{ Nodes []struct{ ID, Status string } }
	}
	c.PostBody(t, h, map[string]any{"documentId": m.Operations[0].ID}).WantNoErrors(t).Decode(t, &d)
	if len(d.Payments.Nodes) != 2 || d.Payments.Nodes[0].Status == "" {
		t.Fatalf("served %+v", d)
	}
	for _, tc := range []struct {
		name  string
		files []string
		code  int
	}{
		{"no files", nil, 2},
		{"a missing file", []string{filepath.Join(dir, "missing.graphql")}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut strings.Builder
			if code := gateway.PrintManifest(&out, &errOut, tc.files); code != tc.code || out.Len() != 0 || errOut.Len() == 0 {
				t.Fatalf("exit %d (want %d), stdout %q, stderr %q", code, tc.code, out.String(), errOut.String())
			}
		})
	}
}
