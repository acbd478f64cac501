// Command schemagen writes the standalone, strict JSON schemas that
// kubeconform validates deploy/kubernetes against, from the Kubernetes
// OpenAPI (swagger 2.0) document that ships in the k8s.io/kubernetes Go
// module (api/openapi-spec/swagger.json). It does what openapi2jsonschema
// --expanded --kubernetes --stand-alone --strict does for the few kinds the
// manifests use: every $ref is inlined, objects with declared properties
// refuse unknown ones, int-or-string and resource quantities accept both
// forms, and apiVersion and kind must match. The output is laid out as
// kubeconform expects: DIR/vVERSION-standalone-strict/KIND-GROUP-VERSION.json.
//
//	dir=$(go mod download -json k8s.io/kubernetes@v1.35.4 | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
//	go run ./deploy/schemagen -spec "$dir/api/openapi-spec/swagger.json" -version 1.35.4 -out deploy/schemas
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// defaultKinds are the kinds deploy/kubernetes and deploy/helm render to
// (the Prometheus Operator's ServiceMonitor and PrometheusRule are not in
// the Kubernetes OpenAPI document: scripts/check-deploy.sh checks them
// otherwise).
var defaultKinds = []string{
	"io.k8s.api.apps.v1.Deployment",
	"io.k8s.api.apps.v1.StatefulSet",
	"io.k8s.api.core.v1.Service",
	"io.k8s.api.core.v1.ConfigMap",
	"io.k8s.api.core.v1.Secret",
	"io.k8s.api.policy.v1.PodDisruptionBudget",
	"io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler",
	"io.k8s.api.networking.v1.Ingress",
	"io.k8s.api.networking.v1.NetworkPolicy",
}

func main() {
	spec := flag.String("spec", "", "path of the Kubernetes swagger.json")
	version := flag.String("version", "", "Kubernetes version of the spec, such as 1.35.4")
	out := flag.String("out", "deploy/schemas", "output directory")
	kinds := flag.String("kinds", strings.Join(defaultKinds, ","), "comma-separated definition names")
	flag.Parse()
	if *spec == "" || *version == "" {
		fmt.Fprintln(os.Stderr, "schemagen: -spec and -version are required")
		os.Exit(2)
	}
	if err := run(*spec, *version, *out, strings.Split(*kinds, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "schemagen:", err)
		os.Exit(1)
	}
}

func run(specPath, version, out string, kinds []string) error {
	raw, err := os.ReadFile(specPath)
	if err != nil {
		return err
	}
	var doc struct {
		Definitions map[string]map[string]any `json:"definitions"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return fmt.Errorf("%s: %w", specPath, err)
	}
	dir := filepath.Join(out, "v"+strings.TrimPrefix(version, "v")+"-standalone-strict")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, name := range kinds {
		def, ok := doc.Definitions[name]
		if !ok {
			return fmt.Errorf("no definition %q in %s", name, specPath)
		}
		group, ver, kind, err := gvk(def)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		g := &expander{defs: doc.Definitions, stack: map[string]bool{name: true}}
		schema := g.expand(def).(map[string]any)
		apiVersion := ver
		if group != "" {
			apiVersion = group + "/" + ver
		}
		props := schema["properties"].(map[string]any)
		props["apiVersion"] = map[string]any{"type": "string", "enum": []any{apiVersion}}
		props["kind"] = map[string]any{"type": "string", "enum": []any{kind}}
		schema["$schema"] = "http://json-schema.org/draft-07/schema#"
		file := strings.ToLower(kind)
		if group != "" {
			file += "-" + strings.ToLower(strings.Split(group, ".")[0])
		}
		file += "-" + strings.ToLower(ver) + ".json"
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(schema); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, file), buf.Bytes(), 0o644); err != nil {
			return err
		}
		fmt.Println(filepath.Join(dir, file))
	}
	return nil
}

func gvk(def map[string]any) (group, version, kind string, err error) {
	list, _ := def["x-kubernetes-group-version-kind"].([]any)
	if len(list) != 1 {
		return "", "", "", fmt.Errorf("want one x-kubernetes-group-version-kind, have %d", len(list))
	}
	m := list[0].(map[string]any)
	group, _ = m["group"].(string)
	version, _ = m["version"].(string)
	kind, _ = m["kind"].(string)
	return group, version, kind, nil
}

type expander struct {
	defs  map[string]map[string]any
	stack map[string]bool // definitions being expanded: a recursive type is left open
}

const quantity = "io.k8s.apimachinery.pkg.api.resource.Quantity"

func (e *expander) expand(node any) any {
	switch n := node.(type) {
	case []any:
		out := make([]any, len(n))
		for i, v := range n {
			out[i] = e.expand(v)
		}
		return out
	case map[string]any:
		if ref, ok := n["$ref"].(string); ok {
			name := strings.TrimPrefix(ref, "#/definitions/")
			if name == quantity {
				return map[string]any{"oneOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "number"}}}
			}
			def, ok := e.defs[name]
			if !ok || e.stack[name] {
				return map[string]any{} // unknown or recursive: accept anything
			}
			e.stack[name] = true
			defer delete(e.stack, name)
			return e.expand(def)
		}
		out := make(map[string]any, len(n))
		keys := make([]string, 0, len(n))
		for k := range n {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if strings.HasPrefix(k, "x-kubernetes-") {
				continue
			}
			if k == "properties" {
				// property names are not schema keywords: expand each value
				props := map[string]any{}
				for pk, pv := range n[k].(map[string]any) {
					props[pk] = e.expand(pv)
				}
				out[k] = props
				continue
			}
			out[k] = e.expand(n[k])
		}
		if out["format"] == "int-or-string" {
			delete(out, "format")
			delete(out, "type")
			out["oneOf"] = []any{map[string]any{"type": "string"}, map[string]any{"type": "integer"}}
		}
		if _, ok := out["properties"]; ok {
			if _, set := out["additionalProperties"]; !set {
				out["additionalProperties"] = false
			}
		}
		return out
	default:
		return n
	}
}
