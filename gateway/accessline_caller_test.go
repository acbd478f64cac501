package gateway_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"paygraph/gateway"
	"paygraph/internal/testenv"
)

// TestAccessLineNamesCaller: every request's access line names the
// merchant by its opaque tag (never the pair, nor the full identity), the
// client's address as the per-address budgets read it, and, when a
// budget refused it, which one: what the runbook tells an operator to
// look for behind an alert.
func TestAccessLineNamesCaller(t *testing.T) {
	var logs testenv.LockedBuffer
	logger := gateway.NewLogger(&logs, gateway.Config{LogFormat: "json"})
	g := startGatewayWith(t, map[string]string{
		"RATE_LIMIT_REQUESTS_PER_SECOND": "1", "RATE_LIMIT_REQUESTS_BURST": "1",
	}, nil, logger)
	biz := g.Biz[0]
	merchant := http.Header{"X-Api-Key": {biz.APIKey}, "X-Api-Secret": {biz.APISecret}}
	for _, tc := range []struct {
		name        string
		header      http.Header
		merchant    bool
		refusedBy   string
		wantOutcome string
	}{
		{"a merchant served", merchant, true, "", "ok"},
		{"the same merchant over its budget", merchant, true, "merchant", "RATE_LIMITED"},
		{"no credentials", nil, false, "", "ok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := strings.ReplaceAll(t.Name(), "/", "-")
			h := tc.header.Clone()
			if h == nil {
				h = http.Header{}
			}
			h.Set("X-Request-Id", id)
			g.Post(t, h, `{ __typename }`, nil)
			line := findLine(t, logs.String(), id)
			tag, _ := line["merchant"].(string)
			switch {
			case tc.merchant && (len(tag) != 16 || strings.Contains(biz.APIKey+biz.APISecret, tag)):
				t.Errorf("merchant %q: want a 16-character opaque tag", tag)
			case !tc.merchant && tag != "":
				t.Errorf("merchant %q for a request without credentials", tag)
			}
			if line["client"] != "127.0.0.1" {
				t.Errorf("client %v, want 127.0.0.1", line["client"])
			}
			if got, _ := line["refused_by"].(string); got != tc.refusedBy {
				t.Errorf("refused_by %q, want %q", got, tc.refusedBy)
			}
			if line["outcome"] != tc.wantOutcome {
				t.Errorf("outcome %v, want %s", line["outcome"], tc.wantOutcome)
			}
		})
	}
}

// findLine is the access line ("request") of the request with id.
func findLine(t *testing.T, logs, id string) map[string]any {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(logs))
	for sc.Scan() {
		var line map[string]any
		if json.Unmarshal(sc.Bytes(), &line) == nil && line["msg"] == "request" && line["request_id"] == id {
			return line
		}
	}
	t.Fatalf("no access line for request %s in:\n%s", id, logs)
	return nil
}
