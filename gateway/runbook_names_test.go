package gateway_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"paygraph/gateway"
	"paygraph/internal/testenv"
)

// runbookMetric is a series the runbook names; runbookField a log field,
// written as the JSON line writes it ("field":).
var (
	runbookMetric = regexp.MustCompile("`((?:paygraph|process|go)_[a-z_]+)")
	runbookField  = regexp.MustCompile(`"([a-z_]+)":`)
	metricsRow    = regexp.MustCompile("^\\| `(paygraph_[a-z_]+)`")
)

// TestRunbookNamesExist: every series the runbook tells an operator to
// check is one the gateway exports (a row of docs/operations.md's metrics
// table, which observe checks against the registry, or a Go runtime or
// process series of a real scrape), and every log field it names is a
// field of a real access line.
func TestRunbookNamesExist(t *testing.T) {
	runbook, err := os.ReadFile("../docs/runbook.md")
	if err != nil {
		t.Fatal(err)
	}
	ops, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{}
	for _, line := range strings.Split(string(ops), "\n") {
		if m := metricsRow.FindStringSubmatch(line); m != nil {
			exported[m[1]] = true
		}
	}

	var logs testenv.LockedBuffer
	g := startGateway(t, setup{env: map[string]string{"RATE_LIMIT_REQUESTS_PER_SECOND": "1", "Config.RateLimitRequestsBurst": "1"}, logger: gateway.NewLogger(&logs, gateway.Config{LogFormat: "json"})})
	biz := g.Biz[0]
	h := http.Header{"X-Api-Key": {biz.APIKey}, "X-Api-Secret": {biz.APISecret}}
	g.Post(t, h, `{ __typename }`, nil)
	g.Post(t, h, `{ __typename }`, nil) // refused: the line names its budget
	resp, err := http.Get(g.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) >= 3 && f[0] == "#" && f[1] == "TYPE" {
			exported[f[2]] = true
		}
	}
	resp.Body.Close()
	fields := map[string]bool{}
	sc = bufio.NewScanner(strings.NewReader(logs.String()))
	for sc.Scan() {
		var line map[string]any
		if json.Unmarshal(sc.Bytes(), &line) == nil && line["msg"] == "request" {
			for k := range line {
				fields[k] = true
			}
		}
	}
	// An operation's line on a live connection names the connection.
	fields["connection_id"] = true

	named := 0
	for _, m := range runbookMetric.FindAllStringSubmatch(string(runbook), -1) {
		named++
		name := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(m[1], "_bucket"), "_count"), "_sum")
		if !exported[name] {
			t.Errorf("the runbook names the series %s, which the gateway does not export", m[1])
		}
	}
	for _, m := range runbookField.FindAllStringSubmatch(string(runbook), -1) {
		named++
		if !fields[m[1]] {
			t.Errorf("the runbook names the log field %q, which no access line has (fields: %v)", m[1], fields)
		}
	}
	if named < 20 {
		t.Fatalf("the runbook names only %d series and fields: did their spelling change?", named)
	}
}
