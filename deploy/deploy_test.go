package deploy

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

const root = ".."

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	cmd, args string
	stage     int // index of the FROM it belongs to
}

func parseDockerfile(t *testing.T) []instruction {
	t.Helper()
	var out []instruction
	stage := -1
	var cur strings.Builder
	for _, line := range strings.Split(read(t, "Dockerfile"), "\n") {
		trimmed := strings.TrimSpace(line)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if strings.HasPrefix(trimmed, "#") { // comment inside a continuation
			continue
		}
		if strings.HasSuffix(trimmed, "\\") {
			cur.WriteString(strings.TrimSuffix(trimmed, "\\") + " ")
			continue
		}
		cur.WriteString(trimmed)
		full := cur.String()
		cur.Reset()
		cmd, args, _ := strings.Cut(full, " ")
		cmd = strings.ToUpper(cmd)
		if cmd == "FROM" {
			stage++
		}
		out = append(out, instruction{cmd: cmd, args: strings.TrimSpace(args), stage: stage})
	}
	return out
}

func TestDockerfile(t *testing.T) {
	ins := parseDockerfile(t)
	var froms []instruction
	stages := map[string]bool{}
	for _, in := range ins {
		if in.cmd == "FROM" {
			froms = append(froms, in)
			if f := strings.Fields(in.args); len(f) >= 3 && strings.EqualFold(f[len(f)-2], "AS") {
				stages[f[len(f)-1]] = true
			}
			if strings.HasSuffix(in.args, ":latest") || !strings.Contains(strings.Fields(strings.ReplaceAll(in.args, "--platform=$BUILDPLATFORM ", ""))[0], ":") {
				t.Errorf("FROM %s: pin a tag (never latest)", in.args)
			}
		}
	}
	if len(froms) < 2 {
		t.Fatalf("want a multi-stage build, have %d FROM", len(froms))
	}
	final := len(froms) - 1
	if img := froms[final].args; !strings.HasPrefix(img, "gcr.io/distroless/static") || !strings.HasSuffix(img, ":nonroot") {
		t.Errorf("final image %q: want distroless static, nonroot (CA certificates, no shell)", img)
	}

	var build string
	var user, healthcheck, entrypoint, expose string
	labels := ""
	for _, in := range ins {
		switch {
		case in.cmd == "RUN" && strings.Contains(in.args, "go build"):
			build = in.args
		case in.cmd == "RUN" && in.stage == final:
			t.Errorf("RUN in the final stage (it has no shell): %s", in.args)
		case in.cmd == "USER" && in.stage == final:
			user = in.args
		case in.cmd == "HEALTHCHECK":
			healthcheck = in.args
		case in.cmd == "ENTRYPOINT" && in.stage == final:
			entrypoint = in.args
		case in.cmd == "EXPOSE" && in.stage == final:
			expose = in.args
		case in.cmd == "LABEL" && in.stage == final:
			labels += in.args
		case in.cmd == "COPY" && strings.Contains(in.args, "--from="):
			from := strings.TrimPrefix(strings.Fields(in.args)[0], "--from=")
			if !stages[from] {
				t.Errorf("COPY --from=%s: no stage of that name", from)
			}
		}
	}
	for _, want := range []string{
		"--mount=type=cache,target=/go/pkg/mod", "--mount=type=cache,target=/root/.cache/go-build",
		"go build -trimpath -ldflags='-s -w'",
	} {
		if !strings.Contains(build, want) {
			t.Errorf("go build RUN %q lacks %q", build, want)
		}
	}
	if !regexp.MustCompile(`(?m)^ENV .*CGO_ENABLED=0`).MatchString(read(t, "Dockerfile")) && !strings.Contains(build, "CGO_ENABLED=0") {
		t.Error("the build must set CGO_ENABLED=0 (a static binary for distroless/static)")
	}
	if u := strings.Split(user, ":")[0]; u == "" || u == "0" || u == "root" {
		t.Errorf("final USER %q: want a non-root user", user)
	} else if _, err := strconv.Atoi(u); err != nil {
		t.Errorf("final USER %q: want numeric, so that Kubernetes' runAsNonRoot can verify it", user)
	}
	if !strings.HasSuffix(healthcheck, `CMD ["/paygraph", "-healthcheck"]`) {
		t.Errorf("HEALTHCHECK %q: want the binary's own -healthcheck, exec form", healthcheck)
	}
	if entrypoint != `["/paygraph"]` {
		t.Errorf("ENTRYPOINT %q", entrypoint)
	}
	if expose != "8080" {
		t.Errorf("EXPOSE %q", expose)
	}
	for _, l := range []string{"org.opencontainers.image.title", "org.opencontainers.image.version", "org.opencontainers.image.revision"} {
		if !strings.Contains(labels, l) {
			t.Errorf("no label %s", l)
		}
	}

	// scripts/check-deploy.sh runs the same build in CI.
	script := read(t, "scripts/check-deploy.sh")
	if !strings.Contains(script, `GO_BUILD_FLAGS=(-trimpath "-ldflags=-s -w")`) {
		t.Error("scripts/check-deploy.sh's GO_BUILD_FLAGS differ from the Dockerfile's -trimpath -ldflags='-s -w'")
	}
}

// TestDockerignore: the context leaves out the repository's history and
// tests, and keeps every file the build embeds.
func TestDockerignore(t *testing.T) {
	var patterns []*regexp.Regexp
	for _, line := range strings.Split(read(t, ".dockerignore"), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "!") {
			t.Fatalf("exceptions (%s) are not handled by this test", line)
		}
		patterns = append(patterns, ignoreRegexp(strings.TrimPrefix(line, "/")))
	}
	ignored := func(p string) bool {
		for _, re := range patterns {
			for q := p; q != "."; q = filepath.Dir(q) { // a matched directory drops its files
				if re.MatchString(q) {
					return true
				}
			}
		}
		return false
	}
	for _, p := range []string{".git/HEAD", "gateway_test.go", "graph/x_test.go", "docs/graphiql.png", "deploy/kubernetes/base/deployment.yaml"} {
		if !ignored(p) {
			t.Errorf("%s is sent to the build context", p)
		}
	}
	needed := []string{"go.mod", "go.sum", "server.go"}
	embed := regexp.MustCompile(`(?m)^//go:embed (.+)$`)
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel != "." && ignored(filepath.ToSlash(rel)) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || ignored(filepath.ToSlash(rel)) {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range embed.FindAllStringSubmatch(string(src), -1) {
			for _, f := range strings.Fields(m[1]) {
				needed = append(needed, filepath.ToSlash(filepath.Join(filepath.Dir(rel), f)))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range needed {
		if ignored(p) {
			t.Errorf("%s is needed by the build but .dockerignore leaves it out", p)
		}
	}
}

// ignoreRegexp turns a .dockerignore pattern (Go filepath.Match syntax plus
// **) into a regexp on slash-separated paths.
func ignoreRegexp(p string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case strings.HasPrefix(p[i:], "**/"):
			b.WriteString("(.*/)?")
			i += 2
		case strings.HasPrefix(p[i:], "**"):
			b.WriteString(".*")
			i++
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

// TestManifests checks what kubeconform's schemas cannot: the policy of
// the base Deployment and its agreement with the gateway's configuration.
func TestManifests(t *testing.T) {
	dep := read(t, "deploy/kubernetes/base/deployment.yaml")
	cm := read(t, "deploy/kubernetes/base/configmap.yaml")
	num := func(src, re string) int {
		t.Helper()
		m := regexp.MustCompile(re).FindStringSubmatch(src)
		if m == nil {
			t.Fatalf("no match for %s", re)
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	grace := num(dep, `terminationGracePeriodSeconds: (\d+)`)
	preStop := num(dep, `(?s)preStop:\s*sleep:\s*seconds: (\d+)`)
	m := regexp.MustCompile(`SHUTDOWN_GRACE: "([^"]+)"`).FindStringSubmatch(cm)
	if m == nil {
		t.Fatal("configmap.yaml sets no SHUTDOWN_GRACE")
	}
	shutdown, err := time.ParseDuration(m[1])
	if err != nil {
		t.Fatal(err)
	}
	if need := time.Duration(preStop)*time.Second + shutdown; time.Duration(grace)*time.Second <= need {
		t.Errorf("terminationGracePeriodSeconds %d must exceed preStop %ds + SHUTDOWN_GRACE %v", grace, preStop, shutdown)
	}
	// Every replica signs and verifies cursors with the same keys, so
	// they come from one Secret, required (a pod with a key of its own
	// would hand out cursors the others refuse).
	if !regexp.MustCompile(`(?s)- name: CURSOR_KEYS\s*valueFrom:\s*secretKeyRef:\s*name: paygraph-cursor-keys\s*key: CURSOR_KEYS\s`).MatchString(dep) ||
		strings.Contains(dep, "optional: true") {
		t.Error("deployment.yaml must take CURSOR_KEYS from the Secret paygraph-cursor-keys (required)")
	}
	// Likewise the session tokens' keys: the overlay's browser origins
	// need /auth/token, which answers 404 without them.
	if !regexp.MustCompile(`(?s)- name: TOKEN_KEYS\s*valueFrom:\s*secretKeyRef:\s*name: paygraph-token-keys\s*key: TOKEN_KEYS\s`).MatchString(dep) {
		t.Error("deployment.yaml must take TOKEN_KEYS from the Secret paygraph-token-keys (required)")
	}
	// And the merchant identity's key: replicas sharing Redis must name a
	// merchant alike, so one Secret, required.
	if !regexp.MustCompile(`(?s)- name: MERCHANT_ID_KEY\s*valueFrom:\s*secretKeyRef:\s*name: paygraph-merchant-id-key\s*key: MERCHANT_ID_KEY\s`).MatchString(dep) {
		t.Error("deployment.yaml must take MERCHANT_ID_KEY from the Secret paygraph-merchant-id-key (required)")
	}
	for _, k := range []string{"CURSOR_KEYS:", "TOKEN_KEYS:", "MERCHANT_ID_KEY:"} {
		if strings.Contains(cm, k) {
			t.Errorf("configmap.yaml must not hold %s it is a secret", k)
		}
	}
	for _, want := range []string{
		"path: /readyz", "path: /healthz", "port: health", "containerPort: 8088", "runAsNonRoot: true", "readOnlyRootFilesystem: true",
		"allowPrivilegeEscalation: false", "- ALL", "type: RuntimeDefault", "configMapRef:",
		"cpu: 500m", "memory: 64Mi", `cpu: "2"`, "memory: 192Mi", "automountServiceAccountToken: false",
	} {
		if !strings.Contains(dep, want) {
			t.Errorf("deployment.yaml lacks %q", want)
		}
	}
	// The kubelet's probes on HEALTH_PORT's listener, out of the reach of
	// the public port's connections.
	probes := regexp.MustCompile(`(?s)(startup|liveness|readiness)Probe:\s*httpGet:\s*path: /\w+\s*port: (\w+)`).FindAllStringSubmatch(dep, -1)
	if len(probes) != 3 {
		t.Errorf("deployment.yaml: %d HTTP probes, want 3", len(probes))
	}
	for _, m := range probes {
		if m[2] != "health" {
			t.Errorf("deployment.yaml: the %s probe on port %s, want health (HEALTH_PORT)", m[1], m[2])
		}
	}
	if !strings.Contains(cm, `HEALTH_PORT: "8088"`) {
		t.Error(`configmap.yaml must set HEALTH_PORT: "8088", the health port's containerPort`)
	}
	err = filepath.WalkDir(filepath.Join(root, "deploy", "kubernetes"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		// The gateway holds no credentials (callers send theirs): no
		// Secret object here, and no Secret read but the ones that hold
		// its own cursor and token keys and the Redis password (with the
		// REDIS_URL that carries it), which the cluster's operators
		// create.
		if regexp.MustCompile(`(?m)^kind: Secret|secretRef:`).Match(b) {
			t.Errorf("%s: the gateway holds no credentials; no Secret", path)
		}
		for _, m := range regexp.MustCompile(`(?m)^\s*- name: (\S+)\s*\n\s*valueFrom:\s*\n\s*secretKeyRef:`).FindAllSubmatch(b, -1) {
			if !secretEnv.MatchString(string(m[1])) {
				t.Errorf("%s: %s comes from a Secret; only CURSOR_KEYS, TOKEN_KEYS, MERCHANT_ID_KEY, REDIS_URL and Redis's REDISCLI_AUTH are secret", path, m[1])
			}
		}
		if n, refs := len(regexp.MustCompile(`secretKeyRef:`).FindAll(b, -1)), len(regexp.MustCompile(`(?m)^\s*- name: (CURSOR_KEYS|TOKEN_KEYS|MERCHANT_ID_KEY|REDIS_URL|REDISCLI_AUTH)\s*\n\s*valueFrom:\s*\n\s*secretKeyRef:`).FindAll(b, -1)); n != refs {
			t.Errorf("%s: %d secretKeyRef, %d of them for the secret settings", path, n, refs)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// secretEnv names the variables a manifest may read from a Secret.
var secretEnv = regexp.MustCompile(`^(CURSOR_KEYS|TOKEN_KEYS|MERCHANT_ID_KEY|REDIS_URL|REDISCLI_AUTH)$`)
