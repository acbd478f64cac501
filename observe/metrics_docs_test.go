package observe

// docs/operations.md's metrics table against the registry: every family
// the gateway can export has a row naming each of its labels, and every
// row is a family, so the runbook and the dashboard never point an
// operator at a series that does not exist.

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

const operationsDoc = "../docs/operations.md"

// metricRow is a row of the metrics table: | `name` (kind) | labels |.
var metricRow = regexp.MustCompile("^\\| `(paygraph_[a-z_]+)`[^|]*\\|(.*)\\|\\s*$")

// describedFamily parses a Desc's String: its name and its labels, the
// variable ones and the constant ones.
var describedFamily = regexp.MustCompile(`fqName: "([^"]+)".*constLabels: \{([^}]*)\}, variableLabels: \{([^}]*)\}`)

// nameLiteral is a family name as the package's source spells it.
var nameLiteral = regexp.MustCompile(`Name:\s+"(paygraph_[a-z_]+)"`)

// allFamilies registers every family the package defines, as a gateway
// with every feature on does, and returns each family's labels.
func allFamilies(t *testing.T) map[string][]string {
	t.Helper()
	m := NewMetrics(Options{
		BreakerState: func() float64 { return 0 },
		Connections:  map[string]func() (int, int){"http": func() (int, int) { return 0, 1 }},
	})
	m.HeldRefusals(func() int { return 0 }, func() uint64 { return 0 })
	m.Subscriptions(func() (int, int) { return 0, 0 })
	m.RateLimitCounter()
	m.TrustedDocumentsCounter()
	m.RedisSkipped()
	m.RedisErrors()
	ch := make(chan *prometheus.Desc)
	go func() { m.reg.Describe(ch); close(ch) }()
	families := map[string][]string{}
	for d := range ch {
		f := describedFamily.FindStringSubmatch(d.String())
		if f == nil {
			t.Fatalf("cannot read %s", d)
		}
		if !strings.HasPrefix(f[1], "paygraph_") {
			continue
		}
		var labels []string
		for _, pair := range strings.Split(f[2], ",") {
			if name, _, ok := strings.Cut(pair, "="); ok {
				labels = append(labels, name)
			}
		}
		for _, l := range strings.Split(f[3], ",") {
			if l != "" {
				labels = append(labels, l)
			}
		}
		families[f[1]] = labels
	}
	return families
}

func TestMetricsTableMatchesRegistry(t *testing.T) {
	t.Parallel()
	families := allFamilies(t)

	// A family defined in the source but not registered above would be
	// missed by the comparison: the source's names are the registry's.
	sources, _ := filepath.Glob("*.go")
	for _, f := range sources {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range nameLiteral.FindAllStringSubmatch(string(b), -1) {
			if _, ok := families[m[1]]; !ok {
				t.Errorf("%s defines %s, which allFamilies does not register: register it there", f, m[1])
			}
		}
	}

	doc, err := os.ReadFile(operationsDoc)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(string(doc), "\n") {
		if m := metricRow.FindStringSubmatch(line); m != nil {
			rows[m[1]] = m[2]
		}
	}
	if len(rows) < 5 {
		t.Fatalf("found %d rows in %s's metrics table: did its format change?", len(rows), operationsDoc)
	}
	var names []string
	for n := range families {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		cell, ok := rows[name]
		if !ok {
			t.Errorf("%s: exported, but %s's metrics table has no row for it", name, operationsDoc)
			continue
		}
		for _, l := range families[name] {
			if !strings.Contains(cell, "`"+l+"`") {
				t.Errorf("%s: its label %q is not named in its row of %s", name, l, operationsDoc)
			}
		}
	}
	for name := range rows {
		if _, ok := families[name]; !ok {
			t.Errorf("%s: a row of %s's metrics table that the gateway does not export", name, operationsDoc)
		}
	}
}
