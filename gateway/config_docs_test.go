package gateway

// The configuration table of docs/operations.md against the settings table
// (config.go), the one owner of every default: the same names, and each
// default as the code has it.

import (
	"os"
	"strings"
	"testing"
	"time"
)

const operationsDoc = "../docs/operations.md"

// docSettings reads the rows of the configuration table ("| `NAME` |
// default | meaning |") under "## Configuration": the default cell by
// name. A row naming several variables (the OTEL_* row) is returned under
// each name, and a name ending in * as is.
func docSettings(text string) map[string]string {
	_, section, _ := strings.Cut(text, "\n## Configuration\n")
	section, _, _ = strings.Cut(section, "\n## ")
	section, _, _ = strings.Cut(section, removedHeading)
	return tableCells(section)
}

// removedHeading heads the list of dropped settings, after the table.
const removedHeading = "\n### Settings removed in this release\n"

// docRemoved reads the rows of the removed settings' table ("| `NAME` |
// now | why |"): the "now" cell by name.
func docRemoved(text string) map[string]string {
	_, section, _ := strings.Cut(text, removedHeading)
	section, _, _ = strings.Cut(section, "\n## ")
	return tableCells(section)
}

// tableCells is the second cell of each row of section's tables whose
// first cell names variables in backticks, by name.
func tableCells(section string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, " | ")
		if len(cells) < 3 || !strings.HasPrefix(line, "| `") {
			continue
		}
		for _, name := range strings.Split(strings.TrimPrefix(cells[0], "| "), ",") {
			out[strings.Trim(strings.TrimSpace(name), "`")] = strings.TrimSpace(cells[1])
		}
	}
	return out
}

// sameDefault: the documented cell says the code's default: "(unset)" or
// "(none)" for an empty one, else the value in backticks, durations
// compared as durations (`1h` is 1h0m0s).
func sameDefault(cell, def string) bool {
	if def == "" {
		return cell == "(unset)" || cell == "(none)"
	}
	v, ok := strings.CutPrefix(cell, "`")
	if !ok {
		return false
	}
	v, ok = strings.CutSuffix(v, "`")
	if !ok {
		return false
	}
	if v == def {
		return true
	}
	dv, err1 := time.ParseDuration(v)
	dd, err2 := time.ParseDuration(def)
	return err1 == nil && err2 == nil && dv == dd
}

// settingsTableDiff lists what the documentation's table and the settings
// table disagree on.
func settingsTableDiff(doc map[string]string) []string {
	var diffs []string
	inCode := map[string]bool{}
	for _, s := range settings {
		inCode[s.env] = true
		cell, ok := doc[s.env]
		switch {
		case !ok:
			diffs = append(diffs, s.env+": a setting with no row in docs/operations.md's configuration table")
		case !sameDefault(cell, s.def):
			diffs = append(diffs, s.env+": docs/operations.md says "+cell+", the settings table "+strings.TrimSpace(`"`+s.def+`"`))
		}
	}
	for name := range doc {
		// OTEL_* are the OpenTelemetry SDK's own variables, read by it.
		if !inCode[name] && !strings.HasPrefix(name, "OTEL_") {
			diffs = append(diffs, name+": a row of docs/operations.md that is no setting")
		}
	}
	return diffs
}

func TestConfigurationTableMatchesSettings(t *testing.T) {
	text, err := os.ReadFile(operationsDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := docSettings(string(text))
	if len(doc) < 30 {
		t.Fatalf("found %d rows in docs/operations.md's configuration table: did its heading or format change?", len(doc))
	}
	for _, d := range settingsTableDiff(doc) {
		t.Error(d)
	}
	// The removed settings' table lists exactly the dropped ones.
	removed := docRemoved(string(text))
	for _, d := range dropped {
		if _, ok := removed[d.env]; !ok {
			t.Errorf("%s: dropped, with no row in docs/operations.md's removed settings", d.env)
		}
		delete(removed, d.env)
	}
	for name := range removed {
		t.Errorf("%s: a row of docs/operations.md's removed settings that is not dropped", name)
	}

	// The check sees a wrong default, a missing row and a row too many.
	for name, spoil := range map[string]func(map[string]string){
		"broken_default":    func(m map[string]string) { m["MAX_COMPLEXITY"] = "`501`" },
		"broken_missing":    func(m map[string]string) { delete(m, "PORT") },
		"broken_unknown":    func(m map[string]string) { m["MAX_WIDGETS"] = "`3`" },
		"broken_unset_cell": func(m map[string]string) { m["REDIS_URL"] = "`redis://localhost`" },
	} {
		t.Run(name, func(t *testing.T) {
			m := docSettings(string(text))
			spoil(m)
			if len(settingsTableDiff(m)) == 0 {
				t.Error("a spoiled table passes")
			}
		})
	}
}
