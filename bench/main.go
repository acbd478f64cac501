// Command bench is paygraph's load benchmark: for every backend latency,
// concurrency and scenario, workers load the sandbox REST API (this binary
// with -serve-sandbox), the gateway (built with `go build`) and a
// hand-written proxy (proxy.go, -serve-proxy), each a process of its own on
// loopback TCP. One markdown table per latency gives throughput, latency
// percentiles, REST calls per query, overhead over the REST floor, each
// process's CPU and RSS (/proc) and the ratio to the proxy. -compare REF
// also builds the gateway at REF and alternates the two cell by cell for
// -rounds rounds. Each cell's stderr line says where the machine's CPU went.
//
//	go run ./bench                                   # defaults: ~3.5 minutes
//	go run ./bench -compare HEAD~3 -scenarios single,list20 -concurrency 16 -latency 0 -rounds 5
package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"paygraph/sandbox"
)

// scenario is one kind of request.
type scenario struct {
	name   string
	direct bool // GET straight to the REST API (the floor)
	path   string
	body   []byte // GraphQL request body (POST /graphql)
	want   int    // REST calls per query the gateway should make
}

func main() {
	serve := flag.String("serve-sandbox", "", "internal: serve the sandbox REST API on this address and print it")
	serveProxyAddr := flag.String("serve-proxy", "", "internal: serve the hand-written proxy on this address and print it")
	proxyREST := flag.String("proxy-rest", "", "internal: the REST API the served proxy calls")
	proxyPprof := flag.String("proxy-pprof", "", "internal: also serve net/http/pprof from the served proxy on this address (with -profile)")
	withProxy := flag.Bool("proxy", true, "also measure the hand-written proxy (proxy.go) beside every gateway cell, interleaved, and give each scenario's ratio to it")
	sbLatency := flag.Duration("sandbox-latency", 0, "internal: the served sandbox's latency per call")
	duration := flag.Duration("duration", 5*time.Second, "measured time per scenario, concurrency and latency")
	warmup := flag.Duration("warmup", 500*time.Millisecond, "unmeasured time before each measurement")
	concList := flag.String("concurrency", "1,16,64", "comma-separated numbers of concurrent clients")
	latList := flag.String("latency", "0,5ms", "comma-separated backend latencies per REST call")
	out := flag.String("out", "", "also write the markdown report to this file")
	only := flag.String("scenarios", "", "comma-separated scenario names to run (default all; the floor always runs)")
	gwEnv := flag.String("gateway-env", "", "comma-separated KEY=VALUE settings for the gateway (default: its own defaults)")
	profile := flag.String("profile", "", "write the gateway's CPU profile (over each measured gateway scenario) and allocation profile (before and after it) into this directory, taken from its PPROF_ADDR listener, and the proxy's the same way (files named cpu-proxy-..., from a pprof listener of its own)")
	idle := flag.Duration("idle-check", 0, "after the load, also wait this long (past the gateway's 90 s keep-alive idle timeout, say 100s) and report its fds, threads and RSS again")
	compare := flag.String("compare", "", "also build the gateway at this git ref (commit, branch, tag) and run it and this tree's alternately in the same run, printing both side by side")
	rounds := flag.Int("rounds", 0, "measurements of every cell, the gateways' order flipping each round; the report gives medians (default 1, or 3 with -compare)")
	flag.Parse()

	if *serve != "" {
		serveSandbox(*serve, *sbLatency)
		return
	}
	if *serveProxyAddr != "" {
		serveProxy(*serveProxyAddr, *proxyREST, *proxyPprof)
		return
	}
	concs, err := parseList(*concList, strconv.Atoi)
	if err != nil || slices.ContainsFunc(concs, func(n int) bool { return n < 1 }) {
		fatal("-concurrency %q: not positive integers (%v)", *concList, err)
	}
	lats, err := parseList(*latList, time.ParseDuration)
	if err != nil || slices.ContainsFunc(lats, func(d time.Duration) bool { return d < 0 }) {
		fatal("-latency %q: not durations (%v)", *latList, err)
	}
	if *rounds == 0 {
		*rounds = 1
		if *compare != "" {
			*rounds = 3
		}
	}
	switch {
	case *rounds < 1:
		fatal("-rounds must be at least 1")
	case *profile != "" && *compare != "":
		fatal("-profile profiles one gateway: run it without -compare")
	case *profile != "" && *duration < 2*time.Second:
		fatal("-profile needs -duration of at least 2s")
	case *profile != "":
		if err := os.MkdirAll(*profile, 0o755); err != nil {
			fatal("-profile: %v", err)
		}
	}
	env := strings.FieldsFunc(*gwEnv, func(c rune) bool { return c == ',' })
	r := &runner{duration: *duration, warmup: *warmup, concs: concs, gwEnv: env, idleCheck: *idle, profileDir: *profile,
		rounds: *rounds, proxy: *withProxy, scenarios: buildScenarios()}
	if *only != "" {
		keep := map[string]bool{"rest": true}
		for _, n := range strings.Split(*only, ",") {
			keep[strings.TrimSpace(n)] = true
		}
		r.scenarios = slices.DeleteFunc(r.scenarios, func(s scenario) bool { return !keep[s.name] })
	}

	tmp, err := os.MkdirTemp("", "paygraph-bench-")
	if err != nil {
		fatal("%v", err)
	}
	defer os.RemoveAll(tmp)
	root, err := moduleRoot()
	if err != nil {
		fatal("%v", err)
	}
	if *compare != "" {
		gw, err := buildAtRef(root, *compare, tmp)
		if err != nil {
			fatal("-compare %s: %v", *compare, err)
		}
		r.gateways = append(r.gateways, gw)
	}
	tree := gateway{label: treeLabel(root, *compare != ""), bin: filepath.Join(tmp, "paygraph")}
	if err := goBuild(root, tree.bin); err != nil {
		fatal("%v", err)
	}
	r.gateways = append(r.gateways, tree)
	if r.self, err = os.Executable(); err != nil {
		fatal("%v", err)
	}

	var report bytes.Buffer
	fmt.Fprintf(&report, "paygraph load benchmark, %s\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&report, "machine: %d CPUs (%s), %s %s/%s; -duration %s -warmup %s; gateway env: %s\n\n",
		runtime.NumCPU(), cpuModel(), runtime.Version(), runtime.GOOS, runtime.GOARCH, *duration, *warmup, cmp.Or(*gwEnv, "(defaults)"))
	if len(r.gateways) > 1 || r.rounds > 1 {
		var names []string
		for _, g := range r.gateways {
			names = append(names, g.label)
		}
		fmt.Fprintf(&report, "gateways: %s; %d rounds, alternating (figures: medians of the rounds)\n\n", strings.Join(names, " and "), r.rounds)
	}
	for _, lat := range lats {
		if err := r.runLatency(lat, &report); err != nil {
			fatal("latency %s: %v", lat, err)
		}
	}
	os.Stdout.Write(report.Bytes())
	if *out != "" {
		if err := os.WriteFile(*out, report.Bytes(), 0o644); err != nil {
			fatal("%v", err)
		}
	}
}

func fatal(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
	os.Exit(1)
}

// The data of the sandbox's default seed, the same in every process.
var (
	data      = sandbox.New(sandbox.Options{})
	biz       = data.Businesses()[0]
	paymentID = data.Payments(biz.APIKey)[0].ID
	sessionID = data.CheckoutSessions(biz.APIKey)[0].Reference
)

func gql(query string, vars map[string]any) []byte {
	b, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		panic(err)
	}
	return b
}

func buildScenarios() []scenario {
	var aliases strings.Builder
	aliases.WriteString("query A($id: ID!) {")
	for i := range 20 {
		fmt.Fprintf(&aliases, " p%d: payment(id: $id) { id status amount { amount currency } customer { name } }", i)
	}
	aliases.WriteString(" }")
	id := map[string]any{"id": paymentID}
	return []scenario{
		{name: "rest", direct: true, path: "/api/v1/payments/" + paymentID, want: 1},
		{name: "single", want: 1, body: gql(`query Pay($id: ID!) { payment(id: $id) { id status amount { amount paisa currency } customer { name email address } createdAt } }`, id)},
		{name: "list20", want: 1, body: gql(`{ payments(first: 20) { nodes { id status amount { amount paisa currency } customer { name email } createdAt } pageInfo { hasNextPage endCursor } } }`, nil)},
		{name: "aliases20", want: 1, body: gql(aliases.String(), id)},
		{name: "list50addr", want: 51, body: gql(`{ payments(first: 50) { nodes { customer { address } } } }`, nil)},
		// Every worker asks what a dashboard open on many screens does, at
		// the same moment: the payment, the list and a session.
		{name: "dashboard", want: 3, body: gql(`query D($id: ID!, $ref: String!) { payment(id: $id) { id status } payments(first: 20) { nodes { id status } } checkoutSession(id: $ref) { sessionId paymentStatus } }`, map[string]any{"id": paymentID, "ref": sessionID})},
		{name: "checkout", want: 2, body: gql(`query S($id: String!) { checkoutSession(id: $id) { sessionId paymentStatus amount { amount } subtotal { amount } metadata { key value } payment { id status amount { amount } customer { address } } } }`, map[string]any{"id": sessionID})},
	}
}

// serveSandbox runs in the child process: the sandbox behind a counter of
// REST requests, readable (and not counted) at GET /__bench/calls.
func serveSandbox(addr string, latency time.Duration) {
	sb := sandbox.New(sandbox.Options{Latency: latency})
	var calls atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/__bench/calls" {
			fmt.Fprintln(w, calls.Load())
			return
		}
		calls.Add(1)
		sb.ServeHTTP(w, r)
	})
	// The sandbox logs every call for its tests: bound that log under load.
	go func() {
		for range time.Tick(time.Second) {
			sb.ResetCalls()
		}
	}()
	serveChild("sandbox", addr, h)
}

// serveChild serves h on addr, prints its LISTEN line and exits when stdin closes.
func serveChild(what, addr string, h http.Handler) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fatal("%s: %v", what, err)
	}
	fmt.Printf("LISTEN http://%s\n", ln.Addr())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	if err := (&http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}).Serve(ln); err != nil {
		fatal("%s: %v", what, err)
	}
}

type proc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	tail  *tailBuffer
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) stop() {
	if p.stdin != nil {
		p.stdin.Close()
	}
	_ = p.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
}

// tailBuffer keeps the last 8 KiB written to it (a child's log).
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 8<<10 {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-(8<<10):]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// proxyArgs are the served proxy's arguments: -proxy-pprof only with a pprofAddr.
func proxyArgs(restURL, pprofAddr string) []string {
	args := []string{"-serve-proxy", "127.0.0.1:0", "-proxy-rest", restURL}
	if pprofAddr != "" {
		args = append(args, "-proxy-pprof", pprofAddr)
	}
	return args
}

// startChild runs this binary with args and waits for its LISTEN line.
func startChild(self, what string, args ...string) (*proc, string, error) {
	cmd := exec.Command(self, args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, "", err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM} // never outlive the benchmark
	p := &proc{cmd: cmd, stdin: stdin, tail: &tailBuffer{}}
	cmd.Stderr = p.tail
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "LISTEN ")
	if err != nil || !ok {
		p.stop()
		return nil, "", fmt.Errorf("%s did not start: %q %v %s", what, line, err, p.tail)
	}
	return p, url, nil
}

func startGateway(bin, restURL string, extraEnv []string) (*proc, string, error) {
	port, err := freePort()
	if err != nil {
		return nil, "", err
	}
	cmd := exec.Command(bin)
	// The per-merchant rate limits would refuse this load (one merchant,
	// thousands of queries a second); -gateway-env can turn them on again.
	cmd.Env = append(os.Environ(), "REST_BASE_URL="+restURL, "PORT="+strconv.Itoa(port), "HEALTH_PORT=0",
		"RATE_LIMIT_REST_CALLS_PER_SECOND=0", "RATE_LIMIT_REQUESTS_PER_SECOND=0")
	cmd.Env = append(cmd.Env, extraEnv...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	p := &proc{cmd: cmd, tail: &tailBuffer{}}
	// The access log goes to a pipe: the gateway pays for logging as in
	// production.
	cmd.Stdout, cmd.Stderr = p.tail, p.tail
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, url, nil
			}
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, "", fmt.Errorf("gateway not ready: %v\n%s", err, p.tail)
		}
	}
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// gateway is one build of the gateway under test.
type gateway struct {
	label string // "this tree (abc1234)", or the ref and its commit
	bin   string
}

func goBuild(dir, out string) error {
	fmt.Fprintf(os.Stderr, "building the gateway (%s) ...\n", dir)
	build := exec.Command("go", "build", "-o", out, ".")
	build.Dir, build.Stdout, build.Stderr = dir, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("go build in %s: %w", dir, err)
	}
	return nil
}

// buildAtRef builds the gateway as it is at ref, from the commit's files
// (`git archive`, leaving the repository alone) in a directory under tmp.
func buildAtRef(root, ref, tmp string) (gateway, error) {
	out, err := exec.Command("git", "-C", root, "rev-parse", "--verify", "--quiet", ref+"^{commit}").Output()
	if err != nil {
		return gateway{}, fmt.Errorf("not a commit of this repository")
	}
	commit := strings.TrimSpace(string(out))
	dir := filepath.Join(tmp, "src-"+commit[:12])
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return gateway{}, err
	}
	tarball := dir + ".tar"
	for _, c := range [][]string{{"git", "-C", root, "archive", "--format=tar", "-o", tarball, commit}, {"tar", "-xf", tarball, "-C", dir}} {
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			return gateway{}, fmt.Errorf("%s: %v: %s", c[0], err, out)
		}
	}
	g := gateway{label: fmt.Sprintf("%s (%s)", ref, commit[:7]), bin: filepath.Join(tmp, "paygraph-"+commit[:12])}
	return g, goBuild(dir, g.bin)
}

// treeLabel names the working tree's gateway: its commit, and whether it has uncommitted changes.
func treeLabel(root string, comparing bool) string {
	if !comparing {
		return "gateway"
	}
	out, err := exec.Command("git", "-C", root, "rev-parse", "--short=7", "HEAD").Output()
	if err != nil {
		return "this tree"
	}
	label := "this tree (" + strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "-C", root, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(st) > 0 {
		label += " + uncommitted changes"
	}
	return label + ")"
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("run it inside the paygraph module (go run ./bench)")
	}
	return filepath.Dir(mod), nil
}

var clockTicks = func() float64 {
	out, err := exec.Command("getconf", "CLK_TCK").Output()
	if n, err2 := strconv.Atoi(strings.TrimSpace(string(out))); err == nil && err2 == nil && n > 0 {
		return float64(n)
	}
	return 100
}()

// cpuSeconds is the process's user+system CPU time.
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// Fields after the ")" closing the command name: state is field 3,
	// utime 14, stime 15.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / clockTicks
}

// machineIdle is the machine's idle (idle+iowait) and total CPU time so
// far, in clock ticks (the "cpu" line of /proc/stat).
func machineIdle() (idle, total float64) {
	b, _ := os.ReadFile("/proc/stat")
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) == 0 {
		return 0, 0
	}
	for i, v := range f[1:] {
		x, _ := strconv.ParseFloat(v, 64)
		total += x
		if i == 3 || i == 4 {
			idle += x
		}
	}
	return idle, total
}

// procLine is the rest of file's first line starting with prefix.
func procLine(file, prefix string) (string, bool) {
	b, _ := os.ReadFile(file)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			return v, true
		}
	}
	return "", false
}

// procStatus reads a "Key: value" line of /proc/<pid>/status (first field).
func procStatus(pid int, key string) int64 {
	v, _ := procLine("/proc/"+strconv.Itoa(pid)+"/status", key+":")
	first, _, _ := strings.Cut(strings.TrimSpace(v), " ") // "12345 kB"
	n, _ := strconv.ParseInt(first, 10, 64)
	return n
}

func cpuModel() string {
	if v, ok := procLine("/proc/cpuinfo", "model name"); ok {
		return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
	}
	return "unknown CPU"
}

// held is what a gateway process holds at one moment.
type held struct {
	rss     float64 // MB
	fds     int
	threads int64
}

func heldBy(pid int) held {
	ents, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	return held{rss: float64(procStatus(pid, "VmRSS")) / 1024, fds: len(ents), threads: procStatus(pid, "Threads")}
}

type runner struct {
	duration, warmup time.Duration
	concs            []int
	scenarios        []scenario
	gwEnv            []string
	gateways         []gateway // with -compare: the ref's, then this tree's
	self             string
	rounds           int
	idleCheck        time.Duration
	profileDir       string
	pprofURL         string // the gateway's, with -profile
	proxyPprofURL    string // the proxy's, with -profile
	proxy            bool   // measure the hand-written proxy too (gw index proxyGW)
}

// Indexes in results that are not a gateway's.
const (
	floorGW = -1
	proxyGW = -2
)

type result struct {
	sc            scenario
	conc          int
	gw            int // index in runner.gateways, floorGW or proxyGW
	n, errs       int
	firstErr      string
	rps           float64
	p50, p90, p99 time.Duration
	callsPerQ     float64
	cpuPer1k      float64 // target CPU seconds per 1,000 queries
	rss           float64 // target RSS after the run, MB
	sandboxCPU1   float64 // sandbox CPU seconds per 1,000 queries
	clientCPU1    float64 // the load generator's (this process's) CPU seconds per 1,000 queries
	idle          float64 // the machine's idle share of its CPU time during the cell (/proc/stat)
}

// running is a gateway or proxy process, and what a gateway held before
// the load, just after it, and after -idle-check.
type running struct {
	gateway
	p                        *proc
	url                      string
	before, after, afterIdle held
}

// runLatency measures every cell at one backend latency and writes its tables.
func (r *runner) runLatency(lat time.Duration, report *bytes.Buffer) error {
	sb, restURL, err := startChild(r.self, "sandbox", "-serve-sandbox", "127.0.0.1:0", "-sandbox-latency", lat.String())
	if err != nil {
		return err
	}
	defer sb.stop()
	// pprofAddr is, with -profile, a free loopback address and its pprof URL.
	pprofAddr := func() (addr, url string, err error) {
		if r.profileDir == "" {
			return "", "", nil
		}
		port, err := freePort()
		addr = "127.0.0.1:" + strconv.Itoa(port)
		return addr, "http://" + addr + "/debug/pprof/", err
	}
	var gws []*running
	for _, g := range r.gateways {
		env := r.gwEnv
		var addr string
		if addr, r.pprofURL, err = pprofAddr(); err != nil {
			return err
		}
		if addr != "" {
			env = append(slices.Clone(env), "PPROF_ADDR="+addr)
		}
		p, url, err := startGateway(g.bin, restURL, env)
		if err != nil {
			return fmt.Errorf("%s: %w", g.label, err)
		}
		defer p.stop()
		gws = append(gws, &running{gateway: g, p: p, url: url + "/graphql", before: heldBy(p.pid())})
	}
	// The targets of a scenario, in the order of even rounds: the gateways,
	// then the proxy.
	targets := slices.Clone(gws)
	if r.proxy {
		var addr string
		if addr, r.proxyPprofURL, err = pprofAddr(); err != nil {
			return err
		}
		p, url, err := startChild(r.self, "proxy", proxyArgs(restURL, addr)...)
		if err != nil {
			return err
		}
		defer p.stop()
		targets = append(targets, &running{gateway: gateway{label: "proxy"}, p: p, url: url + "/proxy/"})
	}

	maxConc := slices.Max(r.concs)
	tr := &http.Transport{MaxIdleConns: 4 * maxConc, MaxIdleConnsPerHost: 2 * maxConc,
		IdleConnTimeout: 90 * time.Second, DisableCompression: true}
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}

	var results []result
	for round := range r.rounds {
		for _, c := range r.concs {
			for _, sc := range r.scenarios {
				if sc.direct {
					results = append(results, r.measure(client, sc, c, lat, restURL+sc.path, restURL, sb.pid(), nil, floorGW))
					continue
				}
				// The target measured first in a round is measured last in
				// the next.
				for k := range targets {
					i := k
					if round%2 == 1 {
						i = len(targets) - 1 - k
					}
					t, gi, url := targets[i], i, targets[i].url
					if i == len(gws) {
						gi, url = proxyGW, url+sc.name
					}
					results = append(results, r.measure(client, sc, c, lat, url, restURL, sb.pid(), t, gi))
				}
			}
		}
	}
	// After the load: what the gateways hold once our connections close.
	tr.CloseIdleConnections()
	time.Sleep(2 * time.Second)
	for _, g := range gws {
		g.after = heldBy(g.p.pid())
	}
	if r.idleCheck > 0 {
		fmt.Fprintf(os.Stderr, "waiting %s with no load ...\n", r.idleCheck)
		time.Sleep(r.idleCheck)
		for _, g := range gws {
			g.afterIdle = heldBy(g.p.pid())
		}
	}

	fmt.Fprintf(report, "### Backend latency %s per REST call\n\n", lat)
	if len(gws) == 1 {
		r.table(report, results)
	} else {
		r.compareTables(report, results, gws)
	}
	for _, g := range gws {
		who := "Gateway process"
		if len(gws) > 1 {
			who = "Gateway " + g.label
		}
		fmt.Fprintf(report, "%s: RSS %.1f MB idle before the load, %.1f MB 2 s after it; open fds %d → %d; threads %d → %d.\n",
			who, g.before.rss, g.after.rss, g.before.fds, g.after.fds, g.before.threads, g.after.threads)
		if r.idleCheck > 0 {
			fmt.Fprintf(report, "After %s more with no load: RSS %.1f MB, open fds %d, threads %d.\n",
				r.idleCheck, g.afterIdle.rss, g.afterIdle.fds, g.afterIdle.threads)
		}
	}
	fmt.Fprintln(report)
	return nil
}

// measure runs one cell: sc at concurrency c against target (a gateway's
// /graphql, the proxy, or the sandbox itself for the floor, g nil).
func (r *runner) measure(client *http.Client, sc scenario, c int, lat time.Duration, target, restURL string, sbPID int, g *running, gi int) result {
	label := "rest"
	if g != nil {
		label = g.label
	}
	fmt.Fprintf(os.Stderr, "latency %-5s c=%-3d %-11s %-20.20s ", lat, c, sc.name, label)
	r.load(client, sc, target, c, r.warmup) // warm: connections, caches
	calls0 := readCalls(client, restURL)
	var cpu0 float64
	if g != nil {
		cpu0 = cpuSeconds(g.p.pid())
	}
	sbcpu0 := cpuSeconds(sbPID)
	cl0 := cpuSeconds(os.Getpid())
	idle0, total0 := machineIdle()
	pprofURL, who := r.pprofURL, "" // the floor (sc.direct) is never profiled
	if gi == proxyGW {
		pprofURL, who = r.proxyPprofURL, "proxy-"
	}
	profiled := r.startProfile(pprofURL, who, sc, c, lat)
	res := r.load(client, sc, target, c, r.duration)
	idle1, total1 := machineIdle()
	perQ := func(cpu float64) float64 { return cpu / float64(max(res.n, 1)) * 1000 }
	res.clientCPU1 = perQ(cpuSeconds(os.Getpid()) - cl0)
	if total1 > total0 {
		res.idle = (idle1 - idle0) / (total1 - total0)
	}
	profiled()
	res.gw = gi
	res.callsPerQ = float64(readCalls(client, restURL)-calls0) / float64(max(res.n, 1))
	if g != nil {
		res.cpuPer1k = perQ(cpuSeconds(g.p.pid()) - cpu0)
		res.rss = heldBy(g.p.pid()).rss
	}
	res.sandboxCPU1 = perQ(cpuSeconds(sbPID) - sbcpu0)
	fmt.Fprintf(os.Stderr, "%8.0f req/s  p50 %-9s p99 %-9s calls/q %.2f errors %d  CPU ms/q: target %.3f sandbox %.3f load %.3f  idle %.0f%%\n",
		res.rps, fmtDur(res.p50), fmtDur(res.p99), res.callsPerQ, res.errs, res.cpuPer1k, res.sandboxCPU1, res.clientCPU1, 100*res.idle)
	if res.errs > 0 {
		fmt.Fprintf(os.Stderr, "  first error: %s\n", res.firstErr)
	}
	return res
}

// cell is the median over the rounds of one scenario, concurrency and
// gateway (errors: the total), and every round's result.
func cell(results []result, name string, conc, gw int) (med result, all []result) {
	for _, res := range results {
		if res.sc.name == name && res.conc == conc && res.gw == gw {
			all = append(all, res)
		}
	}
	if len(all) == 0 {
		return result{}, nil
	}
	med = all[0]
	med.rps = median(all, func(r result) float64 { return r.rps })
	med.p50 = time.Duration(median(all, func(r result) float64 { return float64(r.p50) }))
	med.p90 = time.Duration(median(all, func(r result) float64 { return float64(r.p90) }))
	med.p99 = time.Duration(median(all, func(r result) float64 { return float64(r.p99) }))
	med.callsPerQ = median(all, func(r result) float64 { return r.callsPerQ })
	med.cpuPer1k = median(all, func(r result) float64 { return r.cpuPer1k })
	med.sandboxCPU1 = median(all, func(r result) float64 { return r.sandboxCPU1 })
	med.rss = median(all, func(r result) float64 { return r.rss })
	med.errs = 0
	for _, res := range all {
		med.errs += res.errs
	}
	return med, all
}

func median(rs []result, f func(result) float64) float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	return medianOf(v)
}

// medianOf sorts v and returns its median.
func medianOf(v []float64) float64 {
	slices.Sort(v)
	if n := len(v); n%2 == 0 {
		return (v[n/2-1] + v[n/2]) / 2
	}
	return v[len(v)/2]
}

// table is the report of one gateway (medians when -rounds > 1).
func (r *runner) table(report *bytes.Buffer, results []result) {
	fmt.Fprintln(report, "| scenario | c | req/s | vs floor | proxy req/s | **vs proxy** | p50 | p90 | p99 | REST calls/query | overhead p50 | overhead p99 | gateway CPU s/1k q | proxy CPU s/1k q | CPU vs proxy | sandbox CPU s/1k q | gateway RSS MB | errors (proxy's) |")
	fmt.Fprintln(report, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, sc := range r.scenarios {
		for _, c := range r.concs {
			gi, name := 0, sc.name
			if sc.direct {
				gi, name = floorGW, "rest (floor: GET /api/v1/payments/{id})"
			}
			res, all := cell(results, sc.name, c, gi)
			if all == nil {
				continue
			}
			f, _ := cell(results, "rest", c, floorGW)
			vs, o50, o99, cpu, rss := "1.00", "—", "—", "—", "—"
			pxRPS, vsPx, pxCPU, cpuVsPx, pxErrs := "—", "—", "—", "—", ""
			if !sc.direct {
				vs = fmt.Sprintf("%.2f", res.rps/f.rps)
				o50, o99 = fmtDur(res.p50-f.p50), fmtDur(res.p99-f.p99)
				cpu, rss = fmt.Sprintf("%.3f", res.cpuPer1k), fmt.Sprintf("%.1f", res.rss)
				if px, pall := cell(results, sc.name, c, proxyGW); pall != nil {
					pxRPS, pxCPU = fmt.Sprintf("%.0f", px.rps), fmt.Sprintf("%.3f", px.cpuPer1k)
					vsPx = "**" + pairedRatio(all, pall, func(r result) float64 { return r.rps }) + "**"
					cpuVsPx = pairedRatio(all, pall, func(r result) float64 { return r.cpuPer1k })
					pxErrs = fmt.Sprintf(" (%d)", px.errs)
				}
			}
			fmt.Fprintf(report, "| %s | %d | %.0f | %s | %s | %s | %s | %s | %s | %.2f (want %d) | %s | %s | %s | %s | %s | %.3f | %s | %d%s |\n",
				name, res.conc, res.rps, vs, pxRPS, vsPx, fmtDur(res.p50), fmtDur(res.p90), fmtDur(res.p99),
				res.callsPerQ, sc.want, o50, o99, cpu, pxCPU, cpuVsPx, res.sandboxCPU1, rss, res.errs, pxErrs)
		}
	}
	fmt.Fprintln(report)
}

// compareTables puts the gateways side by side (medians of the rounds,
// the second gateway's figure over the first's), then every round.
func (r *runner) compareTables(report *bytes.Buffer, results []result, gws []*running) {
	a, b := gws[0].label, gws[1].label
	fmt.Fprintf(report, "A = %s, B = %s. Medians of %d rounds; B/A is B's median over A's; vs proxy: the median of the rounds' ratios (their range).\n\n", a, b, r.rounds)
	fmt.Fprintln(report, "| scenario | c | floor req/s | A req/s | B req/s | B/A req/s | A vs floor | B vs floor | proxy req/s | A vs proxy | B vs proxy | A p50 | B p50 | A p99 | B p99 | A CPU s/1k q | B CPU s/1k q | B/A CPU | proxy CPU s/1k q | A RSS MB | B RSS MB | REST calls/q A, B (want) | errors A, B |")
	fmt.Fprintln(report, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	list := func(rs []result, f func(result) string) string {
		var parts []string
		for _, res := range rs {
			parts = append(parts, f(res))
		}
		return strings.Join(parts, ", ")
	}
	rps := func(r result) float64 { return r.rps }
	rpsText := func(r result) string { return fmt.Sprintf("%.0f", r.rps) }
	cpuText := func(r result) string { return fmt.Sprintf("%.3f", r.cpuPer1k) }
	var every bytes.Buffer // the second table's rows
	for _, sc := range r.scenarios {
		if sc.direct {
			continue
		}
		for _, c := range r.concs {
			f, fAll := cell(results, "rest", c, floorGW)
			ra, raAll := cell(results, sc.name, c, 0)
			rb, rbAll := cell(results, sc.name, c, 1)
			px, pxAll := cell(results, sc.name, c, proxyGW)
			fmt.Fprintf(report, "| %s | %d | %.0f | %.0f | %.0f | **%.2f** | %.2f | %.2f | %.0f | %s | %s | %s | %s | %s | %s | %.3f | %.3f | **%.2f** | %.3f | %.1f | %.1f | %.2f, %.2f (%d) | %d, %d |\n",
				sc.name, c, f.rps, ra.rps, rb.rps, ratio(rb.rps, ra.rps), ratio(ra.rps, f.rps), ratio(rb.rps, f.rps),
				px.rps, pairedRatio(raAll, pxAll, rps), pairedRatio(rbAll, pxAll, rps),
				fmtDur(ra.p50), fmtDur(rb.p50), fmtDur(ra.p99), fmtDur(rb.p99),
				ra.cpuPer1k, rb.cpuPer1k, ratio(rb.cpuPer1k, ra.cpuPer1k), px.cpuPer1k, ra.rss, rb.rss,
				ra.callsPerQ, rb.callsPerQ, sc.want, ra.errs, rb.errs)
			fmt.Fprintf(&every, "| %s | %d | %s | %s | %s | %s | %s |\n",
				sc.name, c, list(fAll, rpsText), list(raAll, rpsText), list(rbAll, rpsText), list(raAll, cpuText), list(rbAll, cpuText))
		}
	}
	fmt.Fprintf(report, "\nEvery round (req/s, gateway CPU s/1k q; the floor's req/s):\n\n")
	fmt.Fprintln(report, "| scenario | c | floor req/s | A req/s | B req/s | A CPU s/1k q | B CPU s/1k q |")
	fmt.Fprintln(report, "|---|---:|---|---|---|---|---|")
	report.Write(every.Bytes())
	fmt.Fprintln(report)
}

// pairedRatio is the median of each round's ratio of gw's figure to the
// proxy's, with the lowest and highest, "0.86 (0.81-0.93)": the cells of
// a round share the machine's load of those seconds, which medians would mix.
func pairedRatio(gw, px []result, f func(result) float64) string {
	n := min(len(gw), len(px))
	if n == 0 {
		return "—"
	}
	rs := make([]float64, n)
	for i := range n {
		rs[i] = ratio(f(gw[i]), f(px[i]))
	}
	med := medianOf(rs)
	if n == 1 {
		return fmt.Sprintf("%.2f", med)
	}
	return fmt.Sprintf("%.2f (%.2f-%.2f)", med, rs[0], rs[n-1])
}

func ratio(x, y float64) float64 {
	if y == 0 {
		return 0
	}
	return x / y
}

// startProfile, with -profile, saves the allocation profile of the
// process at pprofURL and starts its CPU profile for about the measured
// time; the function it returns waits for that and saves the allocation
// profile again, into <what>-<who><scenario>-c<N>-<latency>.pprof.
func (r *runner) startProfile(pprofURL, who string, sc scenario, conc int, lat time.Duration) (wait func()) {
	if r.profileDir == "" || pprofURL == "" || sc.direct {
		return func() {}
	}
	name := fmt.Sprintf("%s%s-c%d-%s", who, sc.name, conc, lat)
	save := func(what, url string) {
		resp, err := http.Get(url)
		if err != nil {
			fmt.Fprintf(os.Stderr, "profile %s: %v\n", what, err)
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			fmt.Fprintf(os.Stderr, "profile %s: %d %v\n", what, resp.StatusCode, err)
			return
		}
		file := filepath.Join(r.profileDir, what+"-"+name+".pprof")
		if err := os.WriteFile(file, b, 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "profile %s: %v\n", what, err)
		}
	}
	save("allocs-before", pprofURL+"allocs")
	done := make(chan struct{})
	secs := int((r.duration - time.Second).Seconds())
	go func() {
		defer close(done)
		save("cpu", pprofURL+"profile?seconds="+strconv.Itoa(secs))
	}()
	return func() {
		<-done
		save("allocs-after", pprofURL+"allocs")
	}
}

func readCalls(c *http.Client, restURL string) int64 {
	resp, err := c.Get(restURL + "/__bench/calls")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// load runs conc workers sending sc's request back to back for d.
func (r *runner) load(client *http.Client, sc scenario, target string, conc int, d time.Duration) result {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	type worker struct {
		lat      []time.Duration
		errs     int
		firstErr string
	}
	ws := make([]worker, conc)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range ws {
		w := &ws[i]
		wg.Go(func() {
			w.lat = make([]time.Duration, 0, 4096)
			var body bytes.Buffer
			fail := func(msg string) {
				w.errs++
				w.firstErr = cmp.Or(w.firstErr, msg)
			}
			for ctx.Err() == nil {
				req, _ := http.NewRequest(http.MethodGet, target, nil)
				if !sc.direct {
					req, _ = http.NewRequest(http.MethodPost, target, bytes.NewReader(sc.body))
					req.Header.Set("Content-Type", "application/json")
				}
				req.Header.Set("X-Api-Key", biz.APIKey)
				req.Header.Set("X-Api-Secret", biz.APISecret)
				t0 := time.Now()
				resp, err := client.Do(req)
				if err == nil {
					body.Reset()
					_, err = body.ReadFrom(resp.Body)
					resp.Body.Close()
				}
				el := time.Since(t0)
				switch {
				case err != nil:
					fail(err.Error())
				case resp.StatusCode != http.StatusOK || (!sc.direct && bytes.Contains(body.Bytes(), []byte(`"errors"`))):
					fail(fmt.Sprintf("%d %.300s", resp.StatusCode, body.Bytes()))
				default:
					w.lat = append(w.lat, el)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	res := result{sc: sc, conc: conc}
	var all []time.Duration
	for _, w := range ws {
		all = append(all, w.lat...)
		res.errs += w.errs
		res.firstErr = cmp.Or(res.firstErr, w.firstErr)
	}
	res.n = len(all) + res.errs
	res.rps = float64(len(all)) / elapsed.Seconds()
	slices.Sort(all)
	res.p50, res.p90, res.p99 = pct(all, 0.50), pct(all, 0.90), pct(all, 0.99)
	return res
}

func pct(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func fmtDur(d time.Duration) string {
	ms := float64(d) / float64(time.Millisecond)
	if ms <= -10 || ms >= 10 {
		return fmt.Sprintf("%.1f ms", ms)
	}
	return fmt.Sprintf("%.3f ms", ms)
}

// parseList parses a comma-separated list with parse.
func parseList[T any](s string, parse func(string) (T, error)) ([]T, error) {
	var out []T
	for _, f := range strings.Split(s, ",") {
		v, err := parse(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}
