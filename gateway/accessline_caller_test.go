package gateway_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strconv"
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
	g := startGateway(t, setup{env: map[string]string{
		"RATE_LIMIT_REQUESTS_PER_SECOND": "1", "Config.RateLimitRequestsBurst": "1",
	}, logger: logger})
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

// TestAccessLineNamesOperationBudget: an operation refused by a budget
// of its own (its merchant's REST calls, the bounds on pairs the REST API
// has not accepted) names it on its access line too.
func TestAccessLineNamesOperationBudget(t *testing.T) {
	var logs testenv.LockedBuffer
	logger := gateway.NewLogger(&logs, gateway.Config{LogFormat: "json"})
	g := startGateway(t, setup{env: map[string]string{
		"RATE_LIMIT_REST_CALLS_PER_SECOND": "1", "Config.RateLimitRESTBurst": "10", "MAX_COMPLEXITY": "10",
		"REST_UNACCEPTED_CALLS_PER_SECOND": "20", "REFUSAL_DELAY_MAX": "0", // answered at once
	}, logger: logger})
	// refusedLine posts q as h until an answer is code (at most n times):
	// the access line of that request.
	sent := 0
	refusedLine := func(t *testing.T, h http.Header, q, code string, n int) map[string]any {
		t.Helper()
		for range n {
			sent++
			id := "operation-budget-" + strconv.Itoa(sent)
			h := h.Clone()
			h.Set("X-Request-Id", id)
			if codes := g.Post(t, h, q, nil).Codes(); len(codes) == 1 && codes[0] == code {
				return findLine(t, logs.String(), id)
			}
		}
		t.Fatalf("no %s in %d requests", code, n)
		return nil
	}
	const payments = `{ payments(first: 5) { edges { node { id } } } }`
	invented := http.Header{"X-Api-Key": {"ak_test_invented1"}, "X-Api-Secret": {"sk_test_invented1"}}
	for _, tc := range []struct {
		name   string
		header http.Header
		code   string
		want   string
	}{
		{"a merchant over its REST calls", creds(g.Biz[0]), "RATE_LIMITED", "merchant_rest_calls"},
		// Its first refusal is the REST API's own (its one call), whose
		// line names no budget; the next is the bounds'.
		{"an invented pair", invented, "UNAUTHENTICATED", "unaccepted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.want == "unaccepted" {
				if line := refusedLine(t, tc.header, payments, tc.code, 1); line["refused_by"] != nil {
					t.Errorf("the REST API's refusal: refused_by %v, want none", line["refused_by"])
				}
			}
			line := refusedLine(t, tc.header, payments, tc.code, 30)
			if got, _ := line["refused_by"].(string); got != tc.want {
				t.Errorf("refused_by %q, want %q", got, tc.want)
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
