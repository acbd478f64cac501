package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
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
