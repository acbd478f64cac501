package e2e

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"paygraph/internal/gqltest"
	"paygraph/internal/testenv"
	"paygraph/sandbox"
)

// TestReplicas runs the deployment shape of docs/operations.md "Deploy and scale out"
// for real: one redis-server, the sandbox REST API, and two gateway
// processes of the harness's binary, each with REDIS_URL. A query
// registered (APQ) through replica A is served by hash alone through
// replica B; a cursor from A continues on B; with Redis stopped both keep
// answering, and a hash-only request is a quick PERSISTED_QUERY_NOT_FOUND
// (the client's cue to resend the full query), never a failure or a hang.
func TestReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the gateway binary: not in -short")
	}
	redisBin := testenv.Tool(t, "redis-server")
	rds := startRedisProcess(t, redisBin)

	sb := sandbox.New(sandbox.Options{})
	biz := sb.Businesses()[0]
	restURL := serveLoopback(t, sb)

	// One CURSOR_KEYS for both, as docs/operations.md "Deploy and scale out" asks: a
	// cursor signed by A must verify on B.
	cursorKey := make([]byte, 32)
	_, _ = rand.Read(cursorKey)
	env := map[string]string{"REST_BASE_URL": restURL, "REDIS_URL": rds.URL,
		"CURSOR_KEYS": hex.EncodeToString(cursorKey)}
	a := startReplica(t, "A", env)
	b := startReplica(t, "B", env)
	h := gqltest.Headers(biz.APIKey, biz.APISecret)

	// APQ across replicas.
	const q = `query ReplicaAPQ($first: Int) { payments(first: $first) { nodes { id status amount { paisa } } } }`
	vars := map[string]any{"first": 4}
	a.apq(t, h, "", q, vars).WantCode(t, "PERSISTED_QUERY_NOT_FOUND") // nobody has seen it yet
	b.apq(t, h, "", q, vars).WantCode(t, "PERSISTED_QUERY_NOT_FOUND")
	regA := a.apq(t, h, q, q, vars) // register on A: query + hash
	regA.WantNoErrors(t)
	byHashB := b.apq(t, h, "", q, vars) // hash alone on B
	if len(byHashB.Errors) > 0 {
		t.Fatalf("replica B does not serve by hash a query registered on A (REDIS_URL is the shared APQ store): %+v", byHashB.Errors)
	}
	if !bytes.Equal(regA.Data, byHashB.Data) {
		t.Fatalf("B served the hash with other data:\nA %s\nB %s", regA.Data, byHashB.Data)
	}

	// A cursor from A continues on B, and gives what one process gives.
	const page = `query($after: String) { payments(first: 5, after: $after) { nodes { id } pageInfo { hasNextPage endCursor } } }`
	var p1 connectionPage
	okData(t, a.post(t, h, page, nil), &p1)
	if !p1.Payments.PageInfo.HasNextPage || p1.Payments.PageInfo.EndCursor == "" {
		t.Fatalf("page 1 from A has no next page: %+v", p1)
	}
	after := map[string]any{"after": p1.Payments.PageInfo.EndCursor}
	var onB, onA connectionPage
	okData(t, b.post(t, h, page, after), &onB)
	okData(t, a.post(t, h, page, after), &onA)
	var ten connectionPage
	okData(t, a.post(t, h, `{ payments(first: 10) { nodes { id } pageInfo { hasNextPage endCursor } } }`, nil), &ten)
	want := ten.ids()[5:] // items 6..10 of one process
	if len(want) != 5 {
		t.Fatalf("the first 10 payments of one process: %v", ten.ids())
	}
	if diff := cmp.Diff(want, onB.ids()); diff != "" {
		t.Fatalf("page 2 through B (-one process +B):\n%s", diff)
	}
	if diff := cmp.Diff(onA, onB); diff != "" {
		t.Fatalf("page 2 through B differs from page 2 through A (-A +B):\n%s", diff)
	}

	// Redis dies mid-test.
	// Everything the traffic above left in Redis is a key the docs list.
	checkRedisKeysDocumented(t, rds.URL)
	rds.Stop()
	for _, g := range []*replica{a, b} {
		for i := range 5 {
			var got connectionPage
			okData(t, g.post(t, h, page, after), &got)
			if diff := cmp.Diff(want, got.ids()); diff != "" {
				t.Fatalf("replica %s, request %d with Redis down (-want +got):\n%s", g.name, i, diff)
			}
		}
		// A hash nobody registered: a quick PERSISTED_QUERY_NOT_FOUND.
		fresh := fmt.Sprintf(`{ payments(first: 2) { nodes { id } } } # replica %s`, g.name)
		start := time.Now()
		g.apq(t, h, "", fresh, nil).WantCode(t, "PERSISTED_QUERY_NOT_FOUND")
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("replica %s: hash-only request with Redis down took %v", g.name, d)
		}
		// The client resends the query with its hash: served, and kept
		// by this replica (its local LRU) for the next hash-only request.
		g.apq(t, h, fresh, fresh, nil).WantNoErrors(t)
		g.apq(t, h, "", fresh, nil).WantNoErrors(t)
	}
	// B still serves the hash it fetched from Redis earlier, from memory.
	if r := b.apq(t, h, "", q, vars); len(r.Errors) > 0 || !bytes.Equal(r.Data, regA.Data) {
		t.Fatalf("B lost the persisted query it had: %s %+v", r.Data, r.Errors)
	}
	for _, g := range []*replica{a, b} {
		if code := g.status(t, "/healthz"); code != http.StatusOK {
			t.Fatalf("replica %s /healthz: %d", g.name, code)
		}
	}
}

type connectionPage struct {
	Payments struct {
		Nodes    []struct{ ID string }
		PageInfo struct {
			HasNextPage bool
			EndCursor   string
		}
	}
}

func (p connectionPage) ids() []string {
	var out []string
	for _, n := range p.Payments.Nodes {
		out = append(out, n.ID)
	}
	return out
}

// serveLoopback serves h on a real loopback port until the test ends.
func serveLoopback(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close(); <-done })
	return "http://" + ln.Addr().String()
}

// process is a child process that the test always ends.
type process struct {
	name   string
	cmd    *exec.Cmd
	out    *testenv.LockedBuffer
	exited chan struct{}
	once   sync.Once
}

func startProcess(t *testing.T, name string, env []string, bin string, args ...string) *process {
	t.Helper()
	p := &process{name: name, cmd: exec.Command(bin, args...), out: new(testenv.LockedBuffer), exited: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("output of %s:\n%s", name, p.out.String())
		}
	})
	return p
}

// Stop sends SIGTERM, then SIGKILL if it has not exited within 5s.
func (p *process) Stop() {
	p.once.Do(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(5 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	})
}

type redisProcess struct {
	*process
	URL string
}

func startRedisProcess(t *testing.T, bin string) *redisProcess {
	t.Helper()
	addr := "127.0.0.1:" + strconv.Itoa(testenv.FreeLoopbackPort(t))
	_, port, _ := net.SplitHostPort(addr)
	p := startProcess(t, "redis-server", nil, bin, "--port", port, "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", t.TempDir())
	deadline := time.Now().Add(10 * time.Second)
	for {
		if redisPing(addr) {
			return &redisProcess{process: p, URL: "redis://" + addr + "/0"}
		}
		select {
		case <-p.exited:
			t.Fatalf("redis-server exited:\n%s", p.out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server does not answer on %s:\n%s", addr, p.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// redisPing speaks just enough RESP to see the server answer.
func redisPing(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	buf := make([]byte, 7)
	n, _ := io.ReadFull(c, buf)
	return string(buf[:n]) == "+PONG\r\n"
}

// replica is one gateway process of the harness.
type replica struct {
	*proc
	name string
}

func startReplica(t *testing.T, name string, env map[string]string) *replica {
	t.Helper()
	return &replica{proc: startGateway(t, env), name: name}
}

func (r *replica) status(t *testing.T, path string) int {
	t.Helper()
	code, _ := r.get(path, 10*time.Second)
	return code
}

func (r *replica) post(t *testing.T, h http.Header, query string, vars map[string]any) *gqltest.Response {
	t.Helper()
	return r.do(t, h, map[string]any{"query": query, "variables": vars})
}

// apq sends an Automatic Persisted Query: the hash of hashOf, with query
// as the text ("" for hash alone).
func (r *replica) apq(t *testing.T, h http.Header, query, hashOf string, vars map[string]any) *gqltest.Response {
	t.Helper()
	sum := sha256.Sum256([]byte(hashOf))
	body := map[string]any{"variables": vars, "extensions": map[string]any{
		"persistedQuery": map[string]any{"version": 1, "sha256Hash": hex.EncodeToString(sum[:])}}}
	if query != "" {
		body["query"] = query
	}
	return r.do(t, h, body)
}

func (r *replica) do(t *testing.T, h http.Header, body map[string]any) *gqltest.Response {
	t.Helper()
	c := gqltest.Client{URL: r.URL, HTTP: r.client}
	return c.PostBody(t, h, body)
}

// okData decodes the data of a response that must have no errors.
func okData(t *testing.T, r *gqltest.Response, into any) {
	t.Helper()
	r.WantNoErrors(t)
	r.Decode(t, into)
}
