package e2e

// The harness: the gateway binary (built once per `go test` run), a
// process helper that starts it on a free port with a given environment,
// and what can be read from outside the process: its peak and current RSS
// (/proc), its goroutines and series (/metrics), its log output.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"paygraph/internal/gqltest"
	"paygraph/internal/testenv"
)

// gatewayMemLimit is the Go soft memory limit of the pods
// (deploy/kubernetes: 192 MiB container limit, GOMEMLIMIT=160MiB).
const gatewayMemLimit = "160MiB"

// rssCeiling protects the machine running the tests, not the gateway: a
// gateway whose RSS passes it is killed at once (as a pod's OOM killer
// would kill it far earlier) and the test reports "killed". Without the
// fixes of issue 11 several attacks take a gateway to gigabytes.
const rssCeiling = 1 << 30

var build struct {
	once sync.Once
	dir  string
	bin  string
	err  error
	log  []byte
}

// TestMain removes the gateway binary the run built, if any.
func TestMain(m *testing.M) {
	code := m.Run()
	if build.dir != "" {
		os.RemoveAll(build.dir)
	}
	os.Exit(code)
}

// gatewayBinary builds the gateway (package paygraph, the module root) the
// first time a test needs it and returns its path; every later test of the
// run gets the same binary. It is built as the Dockerfile builds it
// (CGO_ENABLED=0, -trimpath, -s -w) and never with -race, whatever the
// test binary was built with, so that its memory is the production
// figure (the build cache is shared with scripts/check-deploy.sh).
func gatewayBinary(t testing.TB) string {
	t.Helper()
	build.once.Do(func() {
		build.dir, build.err = os.MkdirTemp("", "paygraph-e2e-")
		if build.err != nil {
			return
		}
		// go test puts its own go first on the test's PATH.
		goBin, err := exec.LookPath("go")
		if err != nil {
			build.err = err
			return
		}
		build.bin = filepath.Join(build.dir, "paygraph")
		cmd := exec.Command(goBin, "build", "-trimpath", "-ldflags=-s -w", "-o", build.bin, "paygraph")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		build.log, build.err = cmd.CombinedOutput()
	})
	if build.err != nil {
		t.Fatalf("go build paygraph: %v\n%s", build.err, build.log)
	}
	return build.bin
}

// proc is one gateway process.
type proc struct {
	URL       string // http://127.0.0.1:<port>
	HealthURL string // http://127.0.0.1:<HEALTH_PORT>
	PID       int

	cmd    *exec.Cmd
	out    *lockedBuffer
	exited chan struct{}
	killed atomic.Int64 // RSS (bytes) at which the watchdog killed it; 0: never
	seen   atomic.Int64 // the largest VmHWM the watchdog read, for after an exit
	client *http.Client
}

// startGateway starts the gateway binary with GOMEMLIMIT=160MiB, a free
// port, JSON logs and env on top (an empty value unsets a variable). It
// inherits nothing else from the test's environment but PATH, HOME and
// TMPDIR, so that a developer's REST_* or OTEL_* variables cannot change a
// figure. It waits for /readyz, and kills the process when the test ends
// (printing its output when the test failed).
// e2eMerchantIDKey is the MERCHANT_ID_KEY of the replicas of a test that
// share a Redis (startGateway): 32 bytes, hex.
const e2eMerchantIDKey = "6532652d6d65726368616e742d69642d6b65792d6f662d7468652d74657374730a"

func startGateway(t testing.TB, env map[string]string) *proc {
	t.Helper()
	return startGatewayTries(t, env, 3)
}

// startGatewayTries is startGateway, trying another port when the one
// FreeLoopbackPort found free was taken before the gateway bound it (by
// an outgoing connection's ephemeral port: the floods of the suites open
// thousands), up to tries times.
func startGatewayTries(t testing.TB, env map[string]string, tries int) *proc {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the e2e suites read the gateway's memory from /proc: Linux only")
	}
	bin := gatewayBinary(t)
	port, healthPort := testenv.FreeLoopbackPort(t), testenv.FreeLoopbackPort(t)
	vars := map[string]string{
		"GOMEMLIMIT":     gatewayMemLimit,
		"PORT":           strconv.Itoa(port),
		"HEALTH_PORT":    strconv.Itoa(healthPort),
		"LOG_FORMAT":     "json",
		"SHUTDOWN_GRACE": "1s",
	}
	for _, k := range []string{"PATH", "HOME", "TMPDIR"} {
		if v, ok := os.LookupEnv(k); ok {
			vars[k] = v
		}
	}
	if env["REDIS_URL"] != "" {
		// Replicas that share a Redis share MERCHANT_ID_KEY, as
		// docs/operations.md asks: their budgets, accepted merchants and
		// live-status leases are keyed by the identity it makes. A test
		// that sets CURSOR_KEYS or MERCHANT_ID_KEY itself keeps its own.
		if _, ok := env["MERCHANT_ID_KEY"]; !ok && env["CURSOR_KEYS"] == "" {
			vars["MERCHANT_ID_KEY"] = e2eMerchantIDKey
		}
	}
	for k, v := range env {
		if v == "" {
			delete(vars, k)
			continue
		}
		vars[k] = v
	}
	p := &proc{
		URL:       "http://127.0.0.1:" + strconv.Itoa(port),
		HealthURL: "http://127.0.0.1:" + strconv.Itoa(healthPort),
		cmd:       exec.Command(bin),
		out:       new(lockedBuffer),
		exited:    make(chan struct{}),
		client:    &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}},
	}
	for k, v := range vars {
		p.cmd.Env = append(p.cmd.Env, k+"="+v)
	}
	sort.Strings(p.cmd.Env)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start gateway: %v", err)
	}
	p.PID = p.cmd.Process.Pid
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	stopWatch := p.watchRSS()
	t.Cleanup(func() {
		stopWatch()
		p.kill()
		p.client.CloseIdleConnections()
		if t.Failed() {
			out := p.Output()
			if len(out) > 16<<10 {
				out = "...\n" + out[len(out)-16<<10:]
			}
			t.Logf("gateway output (pid %d, env %v):\n%s", p.PID, settingsOf(p.cmd.Env), out)
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		if code, _ := p.get("/readyz", 3*time.Second); code == http.StatusOK {
			return p
		}
		select {
		case <-p.exited:
			if tries > 1 && strings.Contains(p.Output(), "address already in use") {
				t.Logf("port %d was taken before the gateway bound it: another", port)
				return startGatewayTries(t, env, tries-1)
			}
			t.Fatalf("gateway exited before it was ready:\n%s", p.Output())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("gateway not ready after 20s:\n%s", p.Output())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// settingsOf is env without the variables inherited from the test's.
func settingsOf(env []string) []string {
	var out []string
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k != "PATH" && k != "HOME" && k != "TMPDIR" {
			out = append(out, kv)
		}
	}
	return out
}

// kill ends the process at once: these suites measure it, they do not
// test its shutdown.
func (p *proc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// Output is everything the gateway wrote to stdout and stderr so far.
func (p *proc) Output() string { return p.out.String() }

// Alive reports whether the process is still running.
func (p *proc) Alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// KilledAt is the RSS at which the watchdog killed the gateway, or 0.
func (p *proc) KilledAt() int64 { return p.killed.Load() }

// watchRSS kills the gateway when its RSS passes rssCeiling.
func (p *proc) watchRSS() (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(25 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-p.exited:
				return
			case <-tick.C:
			}
			if hwm, err := peakRSS(p.PID); err == nil && hwm > p.seen.Load() {
				p.seen.Store(hwm)
			}
			if rss, err := statusField(p.PID, "VmRSS"); err == nil && rss > rssCeiling {
				p.killed.Store(rss)
				_ = p.cmd.Process.Signal(syscall.SIGKILL)
				return
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// PeakRSS is the process's RSS high-water mark (VmHWM). After the
// watchdog killed it, the RSS it was killed at; after it exited on its
// own, the last VmHWM the watchdog read (both lower bounds).
func (p *proc) PeakRSS(t testing.TB) int64 {
	t.Helper()
	if k := p.KilledAt(); k > 0 {
		return k
	}
	n, err := peakRSS(p.PID)
	if err != nil {
		if !p.Alive() {
			t.Logf("gateway pid %d exited: peak RSS is the watchdog's last reading", p.PID)
			return p.seen.Load()
		}
		t.Fatalf("peak RSS of pid %d: %v", p.PID, err)
	}
	return n
}

// CPUTime is the CPU time (user and system) the process has used so far,
// from /proc/<pid>/stat (0 when it cannot be read).
func (p *proc) CPUTime() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.PID))
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces: count from after it.
	_, rest, ok := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)           // field 14
	stime, _ := strconv.ParseInt(f[12], 10, 64)           // field 15
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ: 100 on Linux
}

// peakRSS reads the high-water mark of a process's resident set (VmHWM in
// /proc/<pid>/status), in bytes.
func peakRSS(pid int) (int64, error) { return statusField(pid, "VmHWM") }

// statusField reads a "kB" line of /proc/<pid>/status, in bytes.
func statusField(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, field+":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("unexpected %s line %q", field, line)
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		return kb << 10, err
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

func (p *proc) get(path string, timeout time.Duration) (int, []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+path, nil)
	resp, err := p.client.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// Metrics is the gateway's /metrics text ("" when it does not answer
// within 10 s, which under load is a figure too).
func (p *proc) Metrics() string {
	code, b := p.get("/metrics", 10*time.Second)
	if code != http.StatusOK {
		return ""
	}
	return string(b)
}

// metricValue is the value of an unlabelled series in a /metrics text
// (go_goroutines, go_memstats_heap_inuse_bytes).
func metricValue(metrics, name string) (float64, bool) {
	sc := bufio.NewScanner(strings.NewReader(metrics))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v, err == nil
		}
	}
	return 0, false
}

// sampleGoroutines scrapes go_goroutines from /metrics every interval
// until stop is called; stop returns the largest value seen (0 when no
// scrape answered) and how many scrapes answered.
func (p *proc) sampleGoroutines(interval time.Duration) (stop func() (peak, samples int)) {
	done := make(chan struct{})
	var peak, n atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			if v, ok := metricValue(p.Metrics(), "go_goroutines"); ok {
				n.Add(1)
				if int64(v) > peak.Load() {
					peak.Store(int64(v))
				}
			}
			select {
			case <-done:
				return
			case <-time.After(interval):
			}
		}
	}()
	return func() (int, int) { close(done); wg.Wait(); return int(peak.Load()), int(n.Load()) }
}

// logWritten makes sure every line the gateway logged before the call is
// in its output: the log's lines are gathered and written together
// (100 ms), in order, so once the access line of a request
// made now is there, so is every line before it.
func (p *proc) logWritten(t testing.TB) {
	t.Helper()
	id := fmt.Sprintf("e2e-log-written-%d", time.Now().UnixNano())
	p.do(t.Context(), gqlReq{Query: `{ __typename }`, Header: http.Header{"X-Request-Id": {id}}, Timeout: 5 * time.Second})
	if !p.waitForOutput(`"request_id":"`+id+`"`, 5*time.Second) {
		t.Fatalf("no access line for request %s:\n%s", id, p.Output())
	}
}

// waitForOutput waits until the gateway's output contains s (its log lines
// are written when a request ends, a moment after the answer).
func (p *proc) waitForOutput(s string, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for !strings.Contains(p.Output(), s) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// ---- GraphQL over HTTP ----

// The load client below is not gqltest.Client on purpose: it runs in
// worker goroutines where a failed request is a figure, not a test
// failure (gqltest fails the test), and it counts the bytes of answers it
// does not keep. Its errors are gqltest's.

// keepBytes is how much of a response body is kept (and decoded); the
// rest is read and counted only, so that an answer of hundreds of MB costs
// the test nothing.
const keepBytes = 1 << 20

// gqlReq is one request to /graphql.
type gqlReq struct {
	Query     string
	Variables map[string]any
	OpName    string
	Header    http.Header
	GET       bool          // GET /graphql?query=... instead of a JSON POST
	Timeout   time.Duration // 0: 30s
	// body is the POST body already encoded (see encoded), so that a load
	// loop does not spend the test's CPU encoding the same request.
	body []byte
}

// encoded returns q with its JSON POST body encoded once.
func (q gqlReq) encoded() gqlReq {
	body := map[string]any{"query": q.Query}
	if q.Variables != nil {
		body["variables"] = q.Variables
	}
	if q.OpName != "" {
		body["operationName"] = q.OpName
	}
	q.body, _ = json.Marshal(body)
	return q
}

// gqlResp is what came back, or how it failed.
type gqlResp struct {
	Status  int
	Header  http.Header
	Size    int64  // body bytes read
	Body    []byte // at most keepBytes of it
	Elapsed time.Duration
	Err     error // transport error or timeout

	Data   json.RawMessage
	Errors []gqltest.Error
	Parsed bool // the whole body was kept and is a GraphQL response
}

// Codes counts the errors' extensions.code values.
func (r *gqlResp) Codes() map[string]int {
	out := map[string]int{}
	for _, e := range r.Errors {
		out[e.Code()]++
	}
	return out
}

// HasCode reports whether some error has the code.
func (r *gqlResp) HasCode(code string) bool { return r.Codes()[code] > 0 }

// Outcome names the answer in one word: "ok", the first error's code,
// "timeout", "conn-error", "http-<status>", "http-<status>-<size>-body"
// (too large to decode) or "http-<status>-not-graphql".
func (r *gqlResp) Outcome() string {
	switch {
	case r.Err != nil && errors.Is(r.Err, context.DeadlineExceeded):
		return "timeout"
	case r.Err != nil:
		return "conn-error"
	case !r.Parsed && r.Size > keepBytes:
		return fmt.Sprintf("http-%d-%s-body", r.Status, strings.ReplaceAll(kib(r.Size), " ", ""))
	case !r.Parsed:
		return fmt.Sprintf("http-%d-not-graphql", r.Status)
	case len(r.Errors) > 0 && r.Errors[0].Code() != "":
		return r.Errors[0].Code()
	case len(r.Errors) > 0:
		return "error-without-code"
	case r.Status != http.StatusOK:
		return fmt.Sprintf("http-%d", r.Status)
	}
	return "ok"
}

// do sends q to the gateway and reads the whole answer (counting what it
// does not keep). It never fails the test: an attack may well break the
// connection, and that is a figure.
func (p *proc) do(ctx context.Context, q gqlReq) *gqlResp {
	timeout := q.Timeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var req *http.Request
	if q.GET {
		v := url.Values{"query": {q.Query}}
		if q.OpName != "" {
			v.Set("operationName", q.OpName)
		}
		if q.Variables != nil {
			b, _ := json.Marshal(q.Variables)
			v.Set("variables", string(b))
		}
		req, _ = http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/graphql?"+v.Encode(), nil)
	} else {
		if q.body == nil {
			q = q.encoded()
		}
		req, _ = http.NewRequestWithContext(ctx, http.MethodPost, p.URL+"/graphql", bytes.NewReader(q.body))
		req.Header.Set("Content-Type", "application/json")
	}
	for k, vs := range q.Header {
		req.Header[k] = append([]string(nil), vs...)
	}
	start := time.Now()
	resp, err := p.client.Do(req)
	out := &gqlResp{}
	if err != nil {
		out.Err, out.Elapsed = err, time.Since(start)
		if ctx.Err() != nil {
			out.Err = fmt.Errorf("%w (%v)", context.DeadlineExceeded, err)
		}
		return out
	}
	defer resp.Body.Close()
	out.Status, out.Header = resp.StatusCode, resp.Header
	var kept bytes.Buffer
	n, err := io.Copy(&kept, io.LimitReader(resp.Body, keepBytes))
	out.Size = n
	if err == nil {
		m, err2 := io.Copy(io.Discard, resp.Body)
		out.Size += m
		err = err2
	}
	out.Elapsed = time.Since(start)
	out.Body = kept.Bytes()
	if err != nil {
		out.Err = err
		if ctx.Err() != nil {
			out.Err = fmt.Errorf("%w (%v)", context.DeadlineExceeded, err)
		}
		return out
	}
	if out.Size <= keepBytes {
		var g struct {
			Data   json.RawMessage `json:"data"`
			Errors []gqltest.Error `json:"errors"`
		}
		if json.Unmarshal(out.Body, &g) == nil {
			out.Data, out.Errors, out.Parsed = g.Data, g.Errors, true
		}
	}
	return out
}

// ---- figures ----

// mib renders bytes as MiB with one decimal.
func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// kib renders bytes as KiB (or MiB when large).
func kib(n int64) string {
	if n >= 10<<20 {
		return mib(n)
	}
	return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
}

// ms renders a duration in milliseconds.
func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }

// percentile is the p-th percentile (0..100) of ds by the nearest-rank
// method; 0 for none.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := int(p/100*float64(len(s)) + 0.999999)
	return s[min(max(rank, 1), len(s))-1]
}
