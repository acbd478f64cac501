package e2e

// What an operator's kit relies on, checked against the gateway process:
// LOG_LEVEL keeps the probes' and scrapes' access lines out at info, and
// every metric the alerts and the dashboard (deploy/) name is exported.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"paygraph/internal/gqltest"
)

// accessPaths are the paths of the access lines ("msg":"request") in a
// JSON log output, in order.
func accessPaths(t *testing.T, out string) []string {
	t.Helper()
	var paths []string
	for _, line := range strings.Split(out, "\n") {
		var l struct{ Msg, Path, Level string }
		if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &l) != nil || l.Msg != "request" {
			continue
		}
		paths = append(paths, l.Path)
	}
	return paths
}

// TestLogLevelQuietsProbes: with LOG_LEVEL=info (the default) the
// gateway writes no access line for /healthz, /readyz or /metrics, and one
// for a GraphQL request; with LOG_LEVEL=debug it writes them all.
func TestLogLevelQuietsProbes(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs the gateway binary: not in -short")
	}
	fake := newRESTFake(t)
	probes := []string{"/healthz", "/readyz", "/metrics"}
	for _, tc := range []struct {
		level      string
		wantProbes bool
	}{
		{"info", false},
		{"debug", true},
	} {
		t.Run("LOG_LEVEL="+tc.level, func(t *testing.T) {
			p := startGateway(t, map[string]string{"REST_BASE_URL": fake.URL, "LOG_LEVEL": tc.level})
			for range 3 {
				for _, path := range probes {
					if code, _ := p.get(path, 5*time.Second); code != http.StatusOK {
						t.Fatalf("GET %s: %d", path, code)
					}
				}
			}
			r := p.do(t.Context(), gqlReq{Query: `{ payments(first: 1) { nodes { id } } }`, Header: fake.A.Header()})
			if r.Outcome() != "ok" {
				t.Fatalf("query: %s %s", r.Outcome(), r.Body)
			}
			if !p.waitForOutput(`"path":"/graphql"`, 5*time.Second) {
				t.Fatalf("no access line for /graphql:\n%s", p.Output())
			}
			counts := map[string]int{}
			for _, path := range accessPaths(t, p.Output()) {
				counts[path]++
			}
			for _, path := range probes {
				switch n := counts[path]; {
				case !tc.wantProbes && n > 0:
					t.Errorf("LOG_LEVEL=%s wrote %d access lines for %s", tc.level, n, path)
				case tc.wantProbes && n < 3:
					t.Errorf("LOG_LEVEL=%s wrote %d access lines for %s, want at least 3", tc.level, n, path)
				}
			}
			if counts["/graphql"] != 1 {
				t.Errorf("%d access lines for /graphql, want 1", counts["/graphql"])
			}
		})
	}
}

// operatorMetricNames are the metric names the alerts
// (deploy/prometheus/alerts.yaml, the chart's rules) and the dashboard
// (deploy/grafana) query: every paygraph_*, go_* and process_* name.
func operatorMetricNames(t *testing.T) map[string][]string {
	t.Helper()
	names := map[string][]string{} // name -> files naming it
	re := regexp.MustCompile(`\b(?:paygraph|go|process)_[a-z0-9_]+`)
	for _, f := range []string{"../deploy/prometheus/alerts.yaml", "../deploy/grafana/paygraph-dashboard.json"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var exprs []string
		for _, m := range regexp.MustCompile(`(?s)"?expr"?: (\|\n.*?\n\s+for:|"(?:[^"\\]|\\.)*"|[^\n]*)`).FindAllStringSubmatch(string(b), -1) {
			exprs = append(exprs, m[1])
		}
		if len(exprs) == 0 {
			t.Fatalf("%s: no expr", f)
		}
		for _, e := range exprs {
			for _, n := range re.FindAllString(e, -1) {
				if !slices.Contains(names[n], f) {
					names[n] = append(names[n], f)
				}
			}
		}
	}
	return names
}

// TestOperatorMetricsExported: every metric the alerts and the dashboard
// name is on the gateway's /metrics after the traffic they watch: a few
// queries (REST calls, loader batches, trusted documents in allow mode,
// rate-limit decisions), a subscription's first event (its polls) and
// refused requests (RATE_LIMITED, the outcome the surge alert counts).
func TestOperatorMetricsExported(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs the gateway binary: not in -short")
	}
	names := operatorMetricNames(t)
	if len(names) < 15 {
		t.Fatalf("only %d metric names in the alerts and the dashboard: %v", len(names), names)
	}
	manifest := filepath.Join(t.TempDir(), "persisted_queries.json")
	writeRelayManifest(t, manifest, map[string]string{"listed": "query Listed { payments(first: 2) { nodes { id } } }"})
	fake := newRESTFake(t)
	p := startGateway(t, map[string]string{
		"REST_BASE_URL": fake.URL, "TRUSTED_DOCUMENTS": manifest, "TRUSTED_DOCUMENTS_MODE": "allow",
		"RATE_LIMIT_REQUESTS_PER_SECOND": "3", // a burst of 6
	})
	c := gqltest.Client{URL: p.URL, HTTP: p.client, Forbidden: []string{secretA, secretB}}

	// Queries by B (whose budget the refusals below leave alone): a list,
	// nodes of two ids (a loader batch), a trusted document by id.
	r := c.Post(t, fake.B.Header(), `query Operator { payments(first: 5) { nodes { id status customer { name address } } } }`, nil).WantNoErrors(t)
	var data struct {
		Payments struct{ Nodes []struct{ ID string } }
	}
	r.Decode(t, &data)
	if len(data.Payments.Nodes) == 0 {
		t.Fatal("no payments")
	}
	ids := []string{data.Payments.Nodes[0].ID}
	if len(data.Payments.Nodes) > 1 {
		ids = append(ids, data.Payments.Nodes[1].ID)
	}
	c.Post(t, fake.B.Header(), `query Nodes($ids: [ID!]!) { nodes(ids: $ids) { id } }`, map[string]any{"ids": ids}).WantNoErrors(t)
	c.PostBody(t, fake.B.Header(), map[string]any{"documentId": "listed"}).WantNoErrors(t)

	// A subscription over SSE, until its first event.
	subscribeOnce(t, p, fake.B.Header(), data.Payments.Nodes[0].ID)

	// Refused: A past its requests budget.
	limited := false
	for range 20 {
		if r := c.Post(t, fake.A.Header(), `{ __typename }`, nil); len(r.Errors) > 0 && r.Errors[0].Code() == "RATE_LIMITED" {
			limited = true
			break
		}
	}
	if !limited {
		t.Fatal("20 requests past a burst of 6 were never RATE_LIMITED")
	}

	metrics := p.Metrics()
	exported := map[string]bool{}
	for _, line := range strings.Split(metrics, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		exported[strings.FieldsFunc(line, func(r rune) bool { return r == '{' || r == ' ' })[0]] = true
	}
	var missing []string
	for n, files := range names {
		if !exported[n] {
			missing = append(missing, fmt.Sprintf("%s (%s)", n, strings.Join(files, ", ")))
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("named by the alerts or the dashboard, not on /metrics:\n  %s", strings.Join(missing, "\n  "))
	}
	if !strings.Contains(metrics, `outcome="RATE_LIMITED"`) {
		t.Errorf("no RATE_LIMITED series after a refusal (PaygraphRateLimitedSurge counts it)")
	}
	if len(missing) == 0 {
		t.Logf("%d metric names in the alerts and the dashboard, all exported", len(names))
	}
}

// subscribeOnce subscribes to a payment over graphql-sse and returns at
// its first event.
func subscribeOnce(t *testing.T, p *proc, h http.Header, id string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{
		"query":     `subscription ($id: ID!) { paymentUpdated(id: $id) { id status } }`,
		"variables": map[string]string{"id": id},
	})
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.URL+"/graphql", bytes.NewReader(body))
	req.Header = h.Clone()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := p.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("SSE answer %d %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "data: ") {
			if !strings.Contains(line, `"paymentUpdated"`) {
				t.Fatalf("first event: %s", line)
			}
			return
		}
	}
	t.Fatalf("the stream ended with no event: %v", sc.Err())
}
