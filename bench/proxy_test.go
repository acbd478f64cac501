package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	paygraph "paygraph/gateway"
	"paygraph/sandbox"
)

// TestProxyAnswersAsTheGateway: the hand-written proxy is a fair floor
// only if it does the gateway's work: for every scenario it makes the
// same REST calls (counted by the REST side) and answers the same data
// (but for the cursor, which the gateway signs, and the metadata's
// order, which the REST object does not fix).
func TestProxyAnswersAsTheGateway(t *testing.T) {
	sb := sandbox.New(sandbox.Options{})
	var calls atomic.Int64
	rest := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		sb.ServeHTTP(w, r)
	}))
	defer rest.Close()
	env := map[string]string{"RATE_LIMIT_REST_CALLS_PER_SECOND": "0", "RATE_LIMIT_REQUESTS_PER_SECOND": "0"}
	cfg, err := paygraph.LoadConfig(nil, func(k string) string { return env[k] }, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RESTBaseURL = rest.URL
	gw, err := paygraph.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	gwSrv := httptest.NewServer(gw)
	defer gwSrv.Close()
	px := httptest.NewServer(&proxy{rest: rest.URL, client: &http.Client{Timeout: 10 * time.Second}})
	defer px.Close()

	post := func(t *testing.T, url string, body []byte) (any, int64) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Api-Key", biz.APIKey)
		req.Header.Set("X-Api-Secret", biz.APISecret)
		before := calls.Load()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != http.StatusOK || v["errors"] != nil {
			t.Fatalf("%s: %d %v %v", url, resp.StatusCode, err, v)
		}
		// The data alone: the gateway's extensions (the cost receipt) are
		// what a GraphQL gateway adds, not what the proxy must match.
		return normalize(map[string]any{"data": v["data"]}), calls.Load() - before
	}
	for _, sc := range buildScenarios() {
		if sc.direct {
			continue
		}
		t.Run(sc.name, func(t *testing.T) {
			want, gwCalls := post(t, gwSrv.URL+"/graphql", sc.body)
			got, pxCalls := post(t, px.URL+"/proxy/"+sc.name, sc.body)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("the proxy's answer differs from the gateway's (-gateway +proxy):\n%s", diff)
			}
			if gwCalls != int64(sc.want) || pxCalls != int64(sc.want) {
				t.Errorf("REST calls: gateway %d, proxy %d, want %d", gwCalls, pxCalls, sc.want)
			}
		})
	}
}

// normalize drops what may differ between two right answers: the
// endCursor (the gateway signs it) and the order of metadata entries.
func normalize(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if k == "endCursor" {
				v[k] = "(cursor)"
				continue
			}
			v[k] = normalize(x)
		}
		if md, ok := v["metadata"].([]any); ok {
			slices.SortFunc(md, func(a, b any) int {
				ka, _ := a.(map[string]any)["key"].(string)
				kb, _ := b.(map[string]any)["key"].(string)
				return strings.Compare(ka, kb)
			})
		}
	case []any:
		for i := range v {
			v[i] = normalize(v[i])
		}
	}
	return v
}

// TestProxyProfiledOnlyWhenAsked: with -profile the served proxy gets a
// pprof listener of its own (as the gateway's PPROF_ADDR), and its CPU
// and allocation profiles over a measured proxy cell are saved beside
// the gateway's under names of their own; without -profile it has none,
// and the proxy's own port never serves pprof.
func TestProxyProfiledOnlyWhenAsked(t *testing.T) {
	t.Run("arguments", func(t *testing.T) {
		if got := proxyArgs("http://rest", ""); slices.Contains(got, "-proxy-pprof") {
			t.Errorf("without -profile the proxy is started with a pprof listener: %q", got)
		}
		got := proxyArgs("http://rest", "127.0.0.1:1234")
		if i := slices.Index(got, "-proxy-pprof"); i < 0 || i+1 >= len(got) || got[i+1] != "127.0.0.1:1234" {
			t.Errorf("with -profile: %q, want -proxy-pprof 127.0.0.1:1234", got)
		}
	})
	t.Run("the proxy's port serves no pprof", func(t *testing.T) {
		px := httptest.NewServer(&proxy{rest: "http://127.0.0.1:1", client: &http.Client{Timeout: time.Second}})
		defer px.Close()
		resp, err := http.Get(px.URL + "/debug/pprof/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("GET /debug/pprof/ on the proxy's port: %d", resp.StatusCode)
		}
	})
	t.Run("profiles of a proxy cell", func(t *testing.T) {
		pp := httptest.NewServer(http.DefaultServeMux)
		defer pp.Close()
		dir := t.TempDir()
		r := &runner{profileDir: dir, duration: 2 * time.Second, proxyPprofURL: pp.URL + "/debug/pprof/"}
		sc := scenario{name: "single"}
		r.startProfile(r.proxyPprofURL, "proxy-", sc, 16, 0)() // a 1 s CPU profile
		for _, f := range []string{"cpu-proxy-single-c16-0s.pprof", "allocs-before-proxy-single-c16-0s.pprof", "allocs-after-proxy-single-c16-0s.pprof"} {
			b, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				t.Errorf("%s: %v", f, err)
				continue
			}
			if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b { // a profile is gzipped protobuf
				t.Errorf("%s is not a profile: %d bytes %.20q", f, len(b), b)
			}
		}
		// The gateway's profiles keep their names (no prefix).
		r.pprofURL = r.proxyPprofURL
		r.duration = 2 * time.Second
		r.startProfile(r.pprofURL, "", sc, 16, 0)()
		if _, err := os.Stat(filepath.Join(dir, "cpu-single-c16-0s.pprof")); err != nil {
			t.Errorf("the gateway's profile: %v", err)
		}
		// No pprof URL (the proxy not profiled): nothing is fetched.
		r2 := &runner{profileDir: t.TempDir(), duration: 2 * time.Second}
		r2.startProfile(r2.proxyPprofURL, "proxy-", sc, 16, 0)()
		if ents, _ := os.ReadDir(r2.profileDir); len(ents) != 0 {
			t.Errorf("profiles saved without a pprof listener: %v", ents)
		}
	})
}
