package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"paygraph/sandbox"
)

// The documentation's GraphQL Code Generator recipe (its codegen.ts, read
// from docs/clients.md at test time) run with the pinned @graphql-codegen/cli and
// client-preset of e2e/clients against the binary's -print-schema: with
// strictScalars on it must generate, and the custom scalars must come
// out as the documented mapping says; without the mapping it must fail
// (so strictScalars is really on).

// codegenSample selects one field of each custom scalar; codegenFields
// names the generated fields and their scalars.
const codegenSample = `query Sample($id: ID!) {
  payment(id: $id) { createdAt amount { amount paisa } }
}
`

var codegenFields = map[string]string{"createdAt": "DateTime", "amount": "Decimal", "paisa": "SafeInt"}

var (
	codegenBlockRe   = regexp.MustCompile("(?s)```ts\\n(// codegen\\.ts\\n.*?)```")
	codegenScalarsRe = regexp.MustCompile(`(?s)scalars:\s*\{(.*?)\}`)
	codegenMapRe     = regexp.MustCompile(`(\w+):\s*'([^']+)'`)
	schemaScalarRe   = regexp.MustCompile(`(?m)^scalar (\w+)`)
	sampleTypeRe     = regexp.MustCompile(`export type SampleQuery = (.*);`)
	tsFieldRe        = regexp.MustCompile(`(\w+)\??: ([\w| ]+?)(?:,| })`)
)

// readmeCodegenConfig is the documentation's codegen.ts and the scalar mapping
// it documents.
func readmeCodegenConfig(t *testing.T) (config string, mapping map[string]string) {
	t.Helper()
	m := codegenBlockRe.FindStringSubmatch(allDocs(t))
	if m == nil {
		t.Fatal("the documentation has no ```ts block starting with // codegen.ts")
	}
	s := codegenScalarsRe.FindStringSubmatch(m[1])
	if s == nil {
		t.Fatal("the documented codegen.ts has no scalars: { ... }")
	}
	mapping = map[string]string{}
	for _, kv := range codegenMapRe.FindAllStringSubmatch(s[1], -1) {
		mapping[kv[1]] = kv[2]
	}
	return m[1], mapping
}

// docsGatewayURL is the gateway's address as the documentation writes it.
const docsGatewayURL = "http://localhost:8080"

// runCodegen runs graphql-codegen with config in a fresh folder holding
// the binary's schema and the sample document, the documentation's
// gateway address replaced by base; it returns the generated graphql.ts,
// or the tool's output and error.
func runCodegen(t *testing.T, node, clients, config, base string) (generated, output string, err error) {
	t.Helper()
	config = strings.ReplaceAll(config, docsGatewayURL, base)
	dir := t.TempDir()
	schema, err := exec.Command(gatewayBinary(t), "-print-schema").Output()
	if err != nil {
		t.Fatalf("-print-schema: %v", err)
	}
	files := map[string]string{
		"codegen.ts":         config,
		"schema.graphql":     string(schema),
		"src/sample.graphql": codegenSample,
	}
	for name, body := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(clients, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, filepath.Join(clients, "node_modules", "@graphql-codegen", "cli", "esm", "bin.js"), "--config", "codegen.ts")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NODE_NO_WARNINGS=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", string(out), err
	}
	b, rerr := os.ReadFile(filepath.Join(dir, "src", "gql", "graphql.ts"))
	if rerr != nil {
		t.Fatalf("codegen wrote no src/gql/graphql.ts: %v\n%s", rerr, out)
	}
	return string(b), string(out), nil
}

// wireTypes asks the sandbox-mode binary for the sample's fields and
// names each value's JSON type as TypeScript does ("string", "number"):
// what a mapping must say is what the wire carries.
func wireTypes(t *testing.T) map[string]string {
	t.Helper()
	p := startGateway(t, nil)
	fx := sandbox.New(sandbox.Options{}).Fixtures()[0]
	body, _ := json.Marshal(map[string]any{"query": codegenSample, "variables": map[string]string{"id": fx.PaymentID}})
	req, _ := http.NewRequest(http.MethodPost, p.URL+"/graphql", bytes.NewReader(body))
	req.Header = http.Header{"Content-Type": {"application/json"},
		"X-Api-Key": {fx.Business.APIKey}, "X-Api-Secret": {fx.Business.APISecret}}
	resp, err := p.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var g struct {
		Data struct {
			Payment struct {
				CreatedAt any
				Amount    struct{ Amount, Paisa any }
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&g); err != nil {
		t.Fatal(err)
	}
	ts := func(v any) string {
		switch v.(type) {
		case string:
			return "string"
		case float64:
			return "number"
		}
		return fmt.Sprintf("%T", v)
	}
	pay := g.Data.Payment
	return map[string]string{"createdAt": ts(pay.CreatedAt), "amount": ts(pay.Amount.Amount), "paisa": ts(pay.Amount.Paisa)}
}

// TestCodegenRecipe runs the documented codegen.ts, which loads the
// schema from the running gateway's URL (through Node's fetch, which
// offers zstd; Node 20 cannot decode it, so the gateway must answer gzip
// on that tie), and again from the -print-schema file, and checks the
// TypeScript types of the sample's scalar fields against its mapping.
func TestCodegenRecipe(t *testing.T) {
	t.Parallel()
	node, clients := nodeClients(t)
	if _, err := os.Stat(filepath.Join(clients, "node_modules", "@graphql-codegen", "cli")); err != nil {
		t.Fatalf("@graphql-codegen/cli is not installed in e2e/clients (npm ci): %v", err)
	}
	config, mapping := readmeCodegenConfig(t)
	if !strings.Contains(config, "schema: '"+docsGatewayURL+"/graphql'") {
		t.Errorf("the documented codegen.ts does not load the schema from %s/graphql:\n%s", docsGatewayURL, config)
	}
	p := startGateway(t, nil)
	if !strings.Contains(config, "strictScalars: true") {
		t.Errorf("the documented codegen.ts does not set strictScalars: true:\n%s", config)
	}
	schema, err := exec.Command(gatewayBinary(t), "-print-schema").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range schemaScalarRe.FindAllStringSubmatch(string(schema), -1) {
		if mapping[m[1]] == "" {
			t.Errorf("the schema's scalar %s is not in the documented mapping %v", m[1], mapping)
		}
	}

	generated, out, err := runCodegen(t, node, clients, config, p.URL)
	if err != nil {
		t.Fatalf("graphql-codegen with the documented codegen.ts, the schema from %s: %v\n%s", p.URL, err, out)
	}
	t.Run("schema_from_the_file", func(t *testing.T) {
		fromFile := strings.Replace(config, "'"+docsGatewayURL+"/graphql'", "'schema.graphql'", 1)
		g, out, err := runCodegen(t, node, clients, fromFile, p.URL)
		if err != nil {
			t.Fatalf("graphql-codegen with schema.graphql: %v\n%s", err, out)
		}
		if g != generated {
			t.Errorf("the types generated from -print-schema's file differ from those from the URL")
		}
	})
	m := sampleTypeRe.FindStringSubmatch(generated)
	if m == nil {
		t.Fatalf("no SampleQuery type in graphql.ts:\n%s", generated)
	}
	got := map[string]string{}
	for _, f := range tsFieldRe.FindAllStringSubmatch(m[1], -1) {
		if _, ok := codegenFields[f[1]]; ok {
			got[f[1]] = strings.TrimSpace(f[2])
		}
	}
	want, wire := map[string]string{}, wireTypes(t)
	for field, scalar := range codegenFields {
		want[field] = mapping[scalar]
		if mapping[scalar] != wire[field] {
			t.Errorf("the documentation maps %s to %q, but the gateway sends %s (%s) as a JSON %s", scalar, mapping[scalar], field, scalar, wire[field])
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("generated TypeScript of the scalar fields (-documented mapping +generated):\n%s\n%s", diff, m[0])
	}

	t.Run("without_the_mapping_strictScalars_fails", func(t *testing.T) {
		s := codegenScalarsRe.FindStringSubmatch(config)
		bare := strings.Replace(config, s[0], "scalars: {}", 1)
		if _, out, err := runCodegen(t, node, clients, bare, p.URL); err == nil {
			t.Errorf("codegen passed with no scalar mapping under strictScalars: the check above could not fail\n%s", out)
		} else if !strings.Contains(out, "DateTime") {
			t.Errorf("codegen failed, but not for the unmapped scalar: %s", out)
		}
	})
}
