package e2e

// What an operator's kit relies on, checked against the gateway process:
// LOG_LEVEL keeps the probes' and scrapes' access lines out at info, and
// every metric the alerts and the dashboard (deploy/) name is exported.

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
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
