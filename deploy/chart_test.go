package deploy

// The Helm chart (deploy/helm/paygraph) against the kustomize base, and
// the copies of its alerts and dashboard kept in deploy/ for setups
// without Helm: each fact has one owner, and these tests hold the others
// to it. They run helm and kustomize from the project's tools cache
// (scripts/go-tools.sh installs them; scripts/check-deploy.sh runs these
// tests): skipped on a laptop without them, failed under CI=true.

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/google/go-cmp/cmp"

	"paygraph/gateway"
)

var update = flag.Bool("update", false, "rewrite deploy/prometheus/alerts.yaml from the chart")

const (
	chartDir      = "deploy/helm/paygraph"
	alertsFile    = "deploy/prometheus/alerts.yaml"
	dashboardFile = "deploy/grafana/paygraph-dashboard.json"
	kubeVersion   = "1.35.4" // scripts/check-deploy.sh's K8S_VERSION
)

// tool is the path of a tool installed by scripts/go-tools.sh.
func tool(t *testing.T, name string) string {
	t.Helper()
	dir := os.Getenv("PAYGRAPH_TOOLS")
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(cache, "paygraph-tools")
	}
	p := filepath.Join(dir, "bin", name)
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not installed (scripts/check-deploy.sh --install-tools): %v", name, err)
		}
		t.Skipf("%s is not installed (scripts/check-deploy.sh --install-tools)", name)
	}
	return p
}

func run(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(tool(t, name), args...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// object is one rendered Kubernetes object.
type object = map[string]any

// objects parses a multi-document YAML stream, by kind/name.
func objects(t *testing.T, src []byte) map[string]object {
	t.Helper()
	out := map[string]object{}
	for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(src), -1) {
		var o object
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("document %d: %v\n%s", i, err, doc)
		}
		if o == nil {
			continue
		}
		out[fmt.Sprintf("%s/%s", o["kind"], get(o, "metadata", "name"))] = o
	}
	return out
}

// get walks maps by key.
func get(v any, path ...string) any {
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func helmTemplate(t *testing.T, args ...string) map[string]object {
	t.Helper()
	// Release "paygraph" in "payments": the chart's names are then the
	// base's (paygraph, paygraph-cursor-keys, paygraph-redis).
	return objects(t, run(t, "helm", append([]string{"template", "paygraph", chartDir, "--namespace", "payments", "--kube-version", kubeVersion}, args...)...))
}

// without returns a deep copy of o less the given paths.
func without(o any, paths ...[]string) any {
	b, _ := yaml.Marshal(o)
	var c any
	_ = yaml.Unmarshal(b, &c)
	for _, p := range paths {
		if m, ok := get(c, p[:len(p)-1]...).(map[string]any); ok {
			delete(m, p[len(p)-1])
		}
	}
	return c
}

// TestChartAgreesWithKustomize: with its defaults the chart renders the
// base's objects: the same settings (every key of the ConfigMap but
// REDIS_URL, which the chart sets only with a Redis), the same pod spec
// (but the image, the selector's release label and the checksum), HPA,
// PDB and Service; with redis.mode=bundled, networkPolicy and ingress on,
// the example overlay's Redis, NetworkPolicies and Ingress rules.
func TestChartAgreesWithKustomize(t *testing.T) {
	base := objects(t, run(t, "kustomize", "build", "deploy/kubernetes/base"))
	chart := helmTemplate(t)

	t.Run("settings", func(t *testing.T) {
		b := get(base["ConfigMap/paygraph"], "data").(map[string]any)
		c := get(chart["ConfigMap/paygraph"], "data").(map[string]any)
		if r, ok := b["REDIS_URL"]; ok && r != "" {
			t.Errorf("the base sets REDIS_URL %v; the chart's default has no Redis", r)
		}
		delete(b, "REDIS_URL")
		if diff := cmp.Diff(b, c); diff != "" {
			t.Errorf("ConfigMap data (-base +chart):\n%s", diff)
		}
	})
	t.Run("Deployment", func(t *testing.T) {
		strip := [][]string{
			{"metadata"}, {"spec", "selector"}, {"spec", "template", "metadata"},
		}
		b := without(base["Deployment/paygraph"], strip...)
		c := without(chart["Deployment/paygraph"], strip...)
		for _, o := range []any{b, c} {
			for _, ct := range get(o, "spec", "template", "spec", "containers").([]any) {
				delete(ct.(map[string]any), "image")
			}
			tsc := get(o, "spec", "template", "spec", "topologySpreadConstraints").([]any)
			delete(tsc[0].(map[string]any), "labelSelector")
		}
		if diff := cmp.Diff(b, c); diff != "" {
			t.Errorf("Deployment (-base +chart):\n%s", diff)
		}
		// The pod annotations, but the chart's checksum.
		ba := get(base["Deployment/paygraph"], "spec", "template", "metadata", "annotations").(map[string]any)
		ca := get(chart["Deployment/paygraph"], "spec", "template", "metadata", "annotations").(map[string]any)
		delete(ca, "checksum/config")
		if diff := cmp.Diff(ba, ca); diff != "" {
			t.Errorf("pod annotations (-base +chart):\n%s", diff)
		}
	})
	for _, kind := range []string{"HorizontalPodAutoscaler", "PodDisruptionBudget", "Service"} {
		t.Run(kind, func(t *testing.T) {
			strip := [][]string{{"selector"}}
			b := without(get(base[kind+"/paygraph"], "spec"), strip...)
			c := without(get(chart[kind+"/paygraph"], "spec"), strip...)
			if diff := cmp.Diff(b, c); diff != "" {
				t.Errorf("%s spec (-base +chart):\n%s", kind, diff)
			}
		})
	}
	t.Run("example overlay", func(t *testing.T) {
		overlay := objects(t, run(t, "kustomize", "build", "deploy/kubernetes/overlays/example"))
		opts := helmTemplate(t, "--set", "redis.mode=bundled,networkPolicy.enabled=true,ingress.enabled=true,ingress.hosts[0].host=graphql.example.com")
		for _, name := range []string{"StatefulSet/paygraph-redis", "Service/paygraph-redis"} {
			strip := [][]string{{"selector"}, {"template", "metadata"}}
			if diff := cmp.Diff(without(get(overlay[name], "spec"), strip...), without(get(opts[name], "spec"), strip...)); diff != "" {
				t.Errorf("%s spec (-overlay +chart):\n%s", name, diff)
			}
		}
		// The gateway's policy: the same rules (the pod selectors differ
		// by the chart's release label).
		pol := func(o object) any {
			return without(get(o, "spec"), []string{"podSelector"}, []string{"egress"})
		}
		if diff := cmp.Diff(pol(overlay["NetworkPolicy/paygraph"]), pol(opts["NetworkPolicy/paygraph"])); diff != "" {
			t.Errorf("NetworkPolicy ingress (-overlay +chart):\n%s", diff)
		}
		if n, m := len(get(overlay["NetworkPolicy/paygraph"], "spec", "egress").([]any)), len(get(opts["NetworkPolicy/paygraph"], "spec", "egress").([]any)); n != m {
			t.Errorf("NetworkPolicy egress: %d rules in the overlay, %d in the chart", n, m)
		}
		ing := func(o object) any { return without(get(o, "spec"), []string{"tls"}) }
		if diff := cmp.Diff(ing(overlay["Ingress/paygraph"]), ing(opts["Ingress/paygraph"])); diff != "" {
			t.Errorf("Ingress (-overlay +chart):\n%s", diff)
		}
		if diff := cmp.Diff(get(overlay["Ingress/paygraph"], "metadata", "annotations"), get(opts["Ingress/paygraph"], "metadata", "annotations")); diff != "" {
			t.Errorf("Ingress annotations (-overlay +chart):\n%s", diff)
		}
		// Both read REDIS_URL (it carries the password) from the Secret
		// paygraph-redis.
		for name, objs := range map[string]map[string]object{"overlay": overlay, "chart": opts} {
			if got := redisURLRef(objs); got != "paygraph-redis/REDIS_URL" {
				t.Errorf("the %s's gateway reads REDIS_URL from %q, want the Secret paygraph-redis", name, got)
			}
		}
	})
}

// redisURLRef is the Secret (name/key) the gateway's container reads
// REDIS_URL from, "" when none.
func redisURLRef(objs map[string]object) string {
	for _, ct := range get(objs["Deployment/paygraph"], "spec", "template", "spec", "containers").([]any) {
		for _, e := range asList(get(ct, "env")) {
			if get(e, "name") == "REDIS_URL" {
				return fmt.Sprint(get(e, "valueFrom", "secretKeyRef", "name")) + "/" + fmt.Sprint(get(e, "valueFrom", "secretKeyRef", "key"))
			}
		}
	}
	return ""
}

func asList(v any) []any { l, _ := v.([]any); return l }

// TestChartBundledRedisLocked: with redis.mode=bundled and every other
// value at its default (networkPolicy.enabled false), the bundled Redis
// requires a password (a random one per install, in its Secret with the
// REDIS_URL the gateway reads), runs in protected mode, and has a
// NetworkPolicy that admits the gateway's pods only, on the Redis port;
// the kustomize example's Redis is the same (TestChartAgreesWithKustomize).
func TestChartBundledRedisLocked(t *testing.T) {
	a, b := helmTemplate(t, "--set", "redis.mode=bundled"), helmTemplate(t, "--set", "redis.mode=bundled")
	sec := a["Secret/paygraph-redis"]
	if sec == nil {
		t.Fatal("no Secret/paygraph-redis")
	}
	decode := func(o object, key string) string {
		v, err := base64.StdEncoding.DecodeString(fmt.Sprint(get(o, "data", key)))
		if err != nil {
			t.Fatalf("Secret data %s: %v", key, err)
		}
		return string(v)
	}
	pw := decode(sec, "password")
	if len(pw) < 32 {
		t.Errorf("password of %d characters", len(pw))
	}
	if pw == decode(b["Secret/paygraph-redis"], "password") {
		t.Error("two renders made the same password")
	}
	if u, want := decode(sec, "REDIS_URL"), "redis://:"+pw+"@paygraph-redis.payments.svc:6379/0"; u != want {
		t.Errorf("REDIS_URL in the Secret %q, want %q", u, want)
	}
	if got := redisURLRef(a); got != "paygraph-redis/REDIS_URL" {
		t.Errorf("the gateway reads REDIS_URL from %q", got)
	}
	if u, ok := get(a["ConfigMap/paygraph"], "data", "REDIS_URL").(string); ok {
		t.Errorf("the ConfigMap holds REDIS_URL %q", u)
	}

	ct := get(a["StatefulSet/paygraph-redis"], "spec", "template", "spec", "containers").([]any)[0]
	args := fmt.Sprint(get(ct, "args"))
	for _, want := range []string{"--requirepass $(REDISCLI_AUTH)", "--protected-mode yes"} {
		if !strings.Contains(args, want) {
			t.Errorf("Redis args %s: no %q", args, want)
		}
	}
	env := asList(get(ct, "env"))
	if len(env) != 1 || get(env[0], "name") != "REDISCLI_AUTH" || get(env[0], "valueFrom", "secretKeyRef", "name") != "paygraph-redis" ||
		get(env[0], "valueFrom", "secretKeyRef", "key") != "password" {
		t.Errorf("Redis env %v, want REDISCLI_AUTH from the Secret's password", env)
	}

	pol := a["NetworkPolicy/paygraph-redis"]
	if pol == nil {
		t.Fatal("no NetworkPolicy/paygraph-redis with the default networkPolicy.enabled")
	}
	if a["NetworkPolicy/paygraph"] != nil {
		t.Error("the gateway's own NetworkPolicy rendered with networkPolicy.enabled false")
	}
	if got := get(pol, "spec", "podSelector", "matchLabels"); !cmp.Equal(got, get(a["StatefulSet/paygraph-redis"], "spec", "selector", "matchLabels")) {
		t.Errorf("the policy selects %v, not the Redis pods", got)
	}
	ingress := asList(get(pol, "spec", "ingress"))
	if len(ingress) != 1 {
		t.Fatalf("ingress rules %v, want one", ingress)
	}
	from := asList(get(ingress[0], "from"))
	if len(from) != 1 || !cmp.Equal(get(from[0], "podSelector", "matchLabels"), get(a["Deployment/paygraph"], "spec", "selector", "matchLabels")) {
		t.Errorf("admits %v, want the gateway's pods only", from)
	}
	if ports := fmt.Sprint(get(ingress[0], "ports")); ports != "[map[port:6379 protocol:TCP]]" {
		t.Errorf("ports %s, want 6379 only", ports)
	}
	if types := fmt.Sprint(get(pol, "spec", "policyTypes")); types != "[Ingress Egress]" {
		t.Errorf("policyTypes %s", types)
	}
}

// TestChartPublicRoutes: the Ingress routes /graphql, /auth/token, / and
// GraphiQL's assets, and never the probes or /metrics.
func TestChartPublicRoutes(t *testing.T) {
	ing := helmTemplate(t, "--set", "ingress.enabled=true")["Ingress/paygraph"]
	var paths []string
	for _, r := range get(ing, "spec", "rules").([]any) {
		for _, p := range get(r, "http", "paths").([]any) {
			paths = append(paths, fmt.Sprint(get(p, "path")))
		}
	}
	sort.Strings(paths)
	if want := []string{"/", "/auth/token", "/graphiql/", "/graphql"}; !slices.Equal(paths, want) {
		t.Errorf("Ingress paths %v, want %v", paths, want)
	}
	ann := get(ing, "metadata", "annotations").(map[string]any)
	if ann["nginx.ingress.kubernetes.io/proxy-read-timeout"] != "3600" {
		t.Errorf("WebSocket/SSE need the read timeout raised to the longest subscription (1h): %v", ann)
	}
}

// TestChartSecrets: without an existing Secret the chart makes the three
// keys (cursors', tokens', merchant identity's: 32 random bytes each,
// different per render), the Deployment reads them,
// and with existingSecret it reads that one and makes none.
func TestChartSecrets(t *testing.T) {
	a, b := helmTemplate(t), helmTemplate(t)
	for _, name := range []string{"Secret/paygraph-cursor-keys", "Secret/paygraph-token-keys", "Secret/paygraph-merchant-id-key"} {
		if a[name] == nil {
			t.Fatalf("no %s", name)
		}
		if cmp.Equal(get(a[name], "data"), get(b[name], "data")) {
			t.Errorf("%s: two renders made the same key", name)
		}
	}
	ext := helmTemplate(t, "--set", "cursorKeys.existingSecret=vault-cursor,tokenKeys.existingSecret=vault-token,merchantIdKey.existingSecret=vault-merchant-id")
	for name := range ext {
		if strings.HasPrefix(name, "Secret/") {
			t.Errorf("with existing Secrets the chart made %s", name)
		}
	}
	env := fmt.Sprint(get(ext["Deployment/paygraph"], "spec", "template", "spec", "containers"))
	for _, want := range []string{"vault-cursor", "vault-token", "vault-merchant-id"} {
		if !strings.Contains(env, want) {
			t.Errorf("the Deployment does not read %s: %s", want, env)
		}
	}
	// Tokens off: no key, no TOKEN_KEYS (/auth/token answers 404).
	off := helmTemplate(t, "--set", "tokenKeys.enabled=false")
	if off["Secret/paygraph-token-keys"] != nil || strings.Contains(fmt.Sprint(off["Deployment/paygraph"]), "TOKEN_KEYS") {
		t.Error("tokenKeys.enabled=false still makes or reads TOKEN_KEYS")
	}
}

// TestAlertsFileIsTheChartsRules: deploy/prometheus/alerts.yaml is the
// chart's PrometheusRule spec with the default values (-update rewrites
// it).
func TestAlertsFileIsTheChartsRules(t *testing.T) {
	rule := helmTemplate(t, "--set", "metrics.prometheusRule.enabled=true")["PrometheusRule/paygraph"]
	spec := get(rule, "spec")
	if *update {
		b, err := yaml.MarshalWithOptions(spec, yaml.IndentSequence(true), yaml.UseLiteralStyleIfMultiline(true))
		if err != nil {
			t.Fatal(err)
		}
		head := "# The gateway's alerts as a Prometheus rules file (rule_files:), for a\n" +
			"# Prometheus without the Operator. Generated from the Helm chart's\n" +
			"# templates/prometheusrule.yaml with its default values:\n" +
			"#   go test ./deploy/ -run TestAlertsFileIsTheChartsRules -args -update\n" +
			"# Runbook: docs/runbook.md. Checked by promtool (scripts/check-deploy.sh).\n"
		if err := os.WriteFile(filepath.Join(root, alertsFile), append([]byte(head), b...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var file any
	if err := yaml.Unmarshal([]byte(read(t, alertsFile)), &file); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(spec, file); diff != "" {
		t.Errorf("%s differs from the chart's rules (-chart +file; go test ./deploy/ -run %s -args -update):\n%s", alertsFile, t.Name(), diff)
	}
}

// TestDashboardCopies: the chart's dashboard and deploy/grafana's are one
// file.
func TestDashboardCopies(t *testing.T) {
	if a, b := read(t, chartDir+"/files/dashboard.json"), read(t, dashboardFile); a != b {
		t.Errorf("%s/files/dashboard.json and %s differ", chartDir, dashboardFile)
	}
}

// TestRunbookHasEveryAlert: docs/runbook.md has a section for each alert,
// whose anchor is the alert's runbook_url.
func TestRunbookHasEveryAlert(t *testing.T) {
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert       string
				Annotations map[string]string
			}
		}
	}
	if err := yaml.Unmarshal([]byte(read(t, alertsFile)), &rules); err != nil {
		t.Fatal(err)
	}
	runbook := read(t, "docs/runbook.md")
	n := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			n++
			if !regexp.MustCompile(`(?m)^#+ ` + r.Alert + `$`).MatchString(runbook) {
				t.Errorf("docs/runbook.md has no heading %q", r.Alert)
			}
			if url := r.Annotations["runbook_url"]; !strings.HasSuffix(url, "#"+strings.ToLower(r.Alert)) {
				t.Errorf("%s: runbook_url %q does not end in #%s", r.Alert, url, strings.ToLower(r.Alert))
			}
		}
	}
	if n == 0 {
		t.Fatal("no alerts")
	}
}

// dashboardQueries are the PromQL queries of the dashboard's panels.
func dashboardQueries(t *testing.T) []string {
	t.Helper()
	var d struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal([]byte(read(t, dashboardFile)), &d); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			out = append(out, tg.Expr)
		}
	}
	return out
}

// TestDashboardQueriesParse: promtool parses every query of the dashboard
// (as recording rules, with Grafana's variables given values), and fails
// on a spoiled one.
func TestDashboardQueriesParse(t *testing.T) {
	queries := dashboardQueries(t)
	if len(queries) < 15 {
		t.Fatalf("%d queries in %s", len(queries), dashboardFile)
	}
	check := func(queries []string) ([]byte, error) {
		vars := strings.NewReplacer("$__rate_interval", "5m", "$job", ".*")
		type rule struct {
			Record string `yaml:"record"`
			Expr   string `yaml:"expr"`
		}
		var rules []rule
		for i, q := range queries {
			rules = append(rules, rule{Record: fmt.Sprintf("dashboard:query%d", i), Expr: vars.Replace(q)})
		}
		b, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
		if err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(t.TempDir(), "dashboard-rules.yaml")
		if err := os.WriteFile(f, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return exec.Command(tool(t, "promtool"), "check", "rules", f).CombinedOutput()
	}
	if out, err := check(queries); err != nil {
		t.Fatalf("promtool: %v\n%s", err, out)
	}
	if out, err := check([]string{"sum by (pod (go_goroutines)"}); err == nil {
		t.Fatalf("promtool accepted a spoiled query:\n%s", out)
	}
}

// shellWords splits a command line as sh would for the quoting the docs
// use: single and double quotes, and backslash escapes outside quotes.
func shellWords(t *testing.T, s string) []string {
	t.Helper()
	var out []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				t.Fatalf("unterminated ' in %q", s)
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			j := strings.IndexByte(s[i+1:], '"')
			if j < 0 {
				t.Fatalf("unterminated \" in %q", s)
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '\\' && i+1 < len(s):
			cur.WriteByte(s[i+1])
			i++
			inWord = true
		case c == ' ' || c == '\t':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out
}

// TestOperationsHelmExamples renders each `helm install` of
// docs/operations.md with `helm template` and the same arguments: each
// must render, and the one with a Redis must set REDIS_URL.
func TestOperationsHelmExamples(t *testing.T) {
	lines := strings.Split(read(t, "docs/operations.md"), "\n")
	var cmds []string
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "helm install ") {
			continue
		}
		cmd := lines[i]
		for strings.HasSuffix(cmd, "\\") && i+1 < len(lines) {
			i++
			cmd = strings.TrimSuffix(cmd, "\\") + " " + strings.TrimSpace(lines[i])
		}
		cmds = append(cmds, cmd)
	}
	if len(cmds) < 2 {
		t.Fatalf("docs/operations.md has %d helm install commands, want at least 2 (with and without Redis)", len(cmds))
	}
	withRedis := 0
	for i, cmd := range cmds {
		t.Run(fmt.Sprint("example", i+1), func(t *testing.T) {
			args := shellWords(t, cmd)
			if args[0] != "helm" || args[1] != "install" {
				t.Fatalf("not a helm install: %q", cmd)
			}
			args[1] = "template"
			objs := objects(t, run(t, "helm", append(args[1:], "--kube-version", kubeVersion)...))
			if objs["Deployment/paygraph"] == nil {
				t.Fatalf("%q renders no Deployment/paygraph", cmd)
			}
			cm := get(objs["ConfigMap/paygraph"], "data").(map[string]any)
			if got := cm["REDIS_URL"]; strings.Contains(cmd, "redis.mode=") {
				withRedis++
				if got == nil && !strings.Contains(fmt.Sprint(objs["Deployment/paygraph"]), "REDIS_URL") {
					t.Errorf("%q: no REDIS_URL in the ConfigMap or the Deployment", cmd)
				}
			} else if got != nil {
				t.Errorf("%q: REDIS_URL %v without a Redis", cmd, got)
			}
		})
	}
	if withRedis == 0 || withRedis == len(cmds) {
		t.Errorf("want helm install examples with and without Redis, have %d of %d with", withRedis, len(cmds))
	}
}

// TestChartRefusesBadValues: a misspelt value, a secret in the ConfigMap,
// an external Redis without its URL are errors of helm template, not a
// chart that silently ignores them.
func TestChartRefusesBadValues(t *testing.T) {
	for _, tc := range []struct{ name, set, want string }{
		{"misspelt key", "redis.mod=bundled", "additional properties 'mod' not allowed"},
		{"unknown mode", "redis.mode=sentinel", "redis"},
		{"secret as a setting", "config.CURSOR_KEYS=abc", "CURSOR_KEYS"},
		{"merchant identity key as a setting", "config.MERCHANT_ID_KEY=abc", "MERCHANT_ID_KEY"},
		{"external Redis without a URL", "redis.mode=external", "redis.mode=external needs redis.url or redis.externalSecret"},
		{"Redis URL of another scheme", "redis.mode=external,redis.url=http://redis:6379", "redis"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(tool(t, "helm"), "template", "paygraph", chartDir, "--kube-version", kubeVersion, "--set", tc.set)
			cmd.Dir = root
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("--set %s rendered", tc.set)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Errorf("--set %s: %s; want it to say %q", tc.set, out, tc.want)
			}
		})
	}
}

// TestManifestSettingsLoad: every key of the rendered ConfigMaps (the
// base, the example overlay, the chart with its defaults and with every
// option) is a setting the gateway reads (gateway.LoadConfig asks for it)
// or the Go runtime's GOMEMLIMIT, and together they load without an error:
// a misspelt or mis-valued setting fails here, not in a crash-looping pod.
func TestManifestSettingsLoad(t *testing.T) {
	renders := map[string]map[string]object{
		"kustomize base":          objects(t, run(t, "kustomize", "build", "deploy/kubernetes/base")),
		"kustomize example":       objects(t, run(t, "kustomize", "build", "deploy/kubernetes/overlays/example")),
		"chart defaults":          helmTemplate(t),
		"chart every option":      helmTemplate(t, "-f", chartDir+"/ci/all-options-values.yaml"),
		"chart with external URL": helmTemplate(t, "--set", "redis.mode=external,redis.url=rediss://redis.example.com:6380/0"),
	}
	for name, objs := range renders {
		t.Run(name, func(t *testing.T) {
			data, _ := get(objs["ConfigMap/paygraph"], "data").(map[string]any)
			if len(data) == 0 {
				t.Fatal("no ConfigMap/paygraph data")
			}
			asked := map[string]bool{}
			cfg, err := gateway.LoadConfig(nil, func(k string) string {
				asked[k] = true
				v, _ := data[k].(string)
				return v
			}, nil)
			if err != nil {
				t.Errorf("the gateway refuses these settings: %v", err)
			}
			for _, w := range cfg.Dropped {
				t.Errorf("a dropped setting: %s", w)
			}
			for k := range data {
				if !asked[k] && k != "GOMEMLIMIT" {
					t.Errorf("%s is not a setting of the gateway", k)
				}
			}
		})
	}
}

// TestChartSubscriptionsAutoscaling: with autoscaling.subscriptions on,
// the HPA scales on CPU and on live subscriptions per pod, at half of
// SUBSCRIPTION_MAX, under the name docs/operations.md's Prometheus adapter
// rule serves.
func TestChartSubscriptionsAutoscaling(t *testing.T) {
	for _, tc := range []struct{ name, set, want string }{
		{"default cap", "autoscaling.subscriptions.enabled=true", "1000"},
		{"raised cap", "autoscaling.subscriptions.enabled=true,config.SUBSCRIPTION_MAX=5000", "2500"},
		{"explicit target", "autoscaling.subscriptions.enabled=true,autoscaling.subscriptions.averageValue=300", "300"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hpa := helmTemplate(t, "--set", tc.set)["HorizontalPodAutoscaler/paygraph"]
			metrics := get(hpa, "spec", "metrics").([]any)
			if len(metrics) != 2 || get(metrics[0], "resource", "name") != "cpu" {
				t.Fatalf("metrics %v: want CPU and subscriptions", metrics)
			}
			name := get(metrics[1], "pods", "metric", "name")
			if got := get(metrics[1], "pods", "target", "averageValue"); got != tc.want {
				t.Errorf("averageValue %v, want %s", got, tc.want)
			}
			if !strings.Contains(read(t, "docs/operations.md"), fmt.Sprintf("as: %s", name)) {
				t.Errorf("docs/operations.md's adapter rule does not serve %v", name)
			}
		})
	}
}
