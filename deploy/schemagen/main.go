// Command schemagen writes the standalone, strict JSON schemas kubeconform
// validates deploy/kubernetes against, from the swagger.json in the
// k8s.io/kubernetes module, as openapi2jsonschema --expanded --kubernetes
// --stand-alone --strict would: $refs inlined, unknown properties refused,
// int-or-string and quantities accepting both forms, apiVersion and kind
// fixed, in DIR/vVERSION-standalone-strict/KIND-GROUP-VERSION.json. With
// -crd it also makes strict the openAPIV3Schema of CustomResourceDefinition
// files (the Prometheus Operator's ServiceMonitor and PrometheusRule);
// scripts/check-deploy.sh's CHECK_DEPLOY_REGEN=1 runs both:
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
	"strings"

	"github.com/goccy/go-yaml"
)

// defaultKinds are the kinds deploy/kubernetes and deploy/helm render to, but for the CRDs (-crd).
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
	crds := flag.String("crd", "", "comma-separated CustomResourceDefinition YAML files whose schemas to write too")
	flag.Parse()
	if *spec == "" || *version == "" {
		fmt.Fprintln(os.Stderr, "schemagen: -spec and -version are required")
		os.Exit(2)
	}
	dir := filepath.Join(*out, "v"+strings.TrimPrefix(*version, "v")+"-standalone-strict")
	err := run(*spec, dir, strings.Split(*kinds, ","))
	if err == nil && *crds != "" {
		err = runCRDs(dir, strings.Split(*crds, ","))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "schemagen:", err)
		os.Exit(1)
	}
}

// runCRDs writes the schema of every version of each CRD file.
func runCRDs(dir string, files []string) error {
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var crd struct {
			Spec struct {
				Group string
				Names struct{ Kind string }
				// The field names are the CRD's own (lower camel case).
				Versions []struct {
					Name   string
					Schema struct {
						OpenAPIV3Schema map[string]any `yaml:"openAPIV3Schema"`
					}
				}
			}
		}
		if err := yaml.Unmarshal(raw, &crd); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if crd.Spec.Group == "" || crd.Spec.Names.Kind == "" || len(crd.Spec.Versions) == 0 {
			return fmt.Errorf("%s: not a CustomResourceDefinition with a group, a kind and versions", f)
		}
		for _, v := range crd.Spec.Versions {
			if v.Schema.OpenAPIV3Schema == nil {
				return fmt.Errorf("%s: version %s has no openAPIV3Schema", f, v.Name)
			}
			// A CRD's schema has no $ref: the expander only makes it strict.
			g := &expander{stack: map[string]bool{}}
			schema := g.expand(v.Schema.OpenAPIV3Schema).(map[string]any)
			name, err := write(dir, schema, crd.Spec.Group, v.Name, crd.Spec.Names.Kind)
			if err != nil {
				return err
			}
			fmt.Println(name)
		}
	}
	return nil
}

// write sets a schema's apiVersion and kind, and writes it where
// kubeconform looks for it.
func write(dir string, schema map[string]any, group, ver, kind string) (string, error) {
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
		return "", err
	}
	return filepath.Join(dir, file), os.WriteFile(filepath.Join(dir, file), buf.Bytes(), 0o644)
}

// run writes the schema of each of kinds from the swagger document at specPath.
func run(specPath, dir string, kinds []string) error {
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
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, name := range kinds {
		def, ok := doc.Definitions[name]
		if !ok {
			return fmt.Errorf("no definition %q in %s", name, specPath)
		}
		list, _ := def["x-kubernetes-group-version-kind"].([]any)
		if len(list) != 1 {
			return fmt.Errorf("%s: want one x-kubernetes-group-version-kind, have %d", name, len(list))
		}
		m := list[0].(map[string]any)
		group, _ := m["group"].(string)
		ver, _ := m["version"].(string)
		kind, _ := m["kind"].(string)
		g := &expander{defs: doc.Definitions, stack: map[string]bool{name: true}}
		schema := g.expand(def).(map[string]any)
		file, err := write(dir, schema, group, ver, kind)
		if err != nil {
			return err
		}
		fmt.Println(file)
	}
	return nil
}

// expander inlines $refs and makes a schema strict.
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
		if n["x-kubernetes-int-or-string"] == true { // a CRD's int-or-string
			return map[string]any{"oneOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "integer"}}}
		}
		open := n["x-kubernetes-preserve-unknown-fields"] == true // a CRD's free-form object
		out := make(map[string]any, len(n))
		for k, v := range n { // each value is expanded on its own: any order
			if strings.HasPrefix(k, "x-kubernetes-") {
				continue
			}
			if k == "properties" {
				// property names are not schema keywords: expand each value
				props := map[string]any{}
				for pk, pv := range v.(map[string]any) {
					props[pk] = e.expand(pv)
				}
				out[k] = props
				continue
			}
			out[k] = e.expand(v)
		}
		if out["format"] == "int-or-string" {
			delete(out, "format")
			delete(out, "type")
			out["oneOf"] = []any{map[string]any{"type": "string"}, map[string]any{"type": "integer"}}
		}
		if _, ok := out["properties"]; ok && !open {
			if _, set := out["additionalProperties"]; !set {
				out["additionalProperties"] = false
			}
		}
		return out
	default:
		return n
	}
}
