package e2e

// The traffic controls of issue 17 with the gateway as its own process:
// per-merchant rate limits shared by two replicas through one real
// redis-server (and local when it is gone), and trusted documents reloaded
// on SIGHUP while requests run.

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"paygraph/internal/gqltest"
	"paygraph/internal/testenv"
)

// rateLimitEnv: one REST call a second and a burst of 20 per merchant
// (MAX_COMPLEXITY at the burst), no requests limit, so that every
// refusal is the REST-call budget's.
func rateLimitEnv(restURL, redisURL string) map[string]string {
	return map[string]string{
		"REST_BASE_URL": restURL, "REDIS_URL": redisURL,
		"RATE_LIMIT_REST_CALLS_PER_SECOND": "1", "MAX_COMPLEXITY": "20", // the burst: 20
		"RATE_LIMIT_REQUESTS_PER_SECOND": "0",
	}
}

// TestRateLimitSharedByReplicas: merchant A sends 60 one-call queries,
// alternately to two replicas sharing one redis-server: together they admit
// its burst and what refilled meanwhile, not a burst each; the REST API
// gets exactly the admitted calls; merchant B is served on both. Then
// Redis stops: both replicas keep answering, each under its own local
// limits, quickly.
func TestRateLimitSharedByReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("runs redis-server and two gateway processes: not in -short")
	}
	rds := startRedisProcess(t, testenv.Tool(t, "redis-server"))
	fake := newRESTFake(t)
	env := rateLimitEnv(fake.URL, rds.URL)
	replicas := []*proc{startGateway(t, env), startGateway(t, env)}
	clients := make([]gqltest.Client, len(replicas))
	for i, p := range replicas {
		clients[i] = gqltest.Client{URL: p.URL, HTTP: p.client, Forbidden: []string{secretA, secretB}}
	}
	const q = `{ payments(first: 1) { nodes { id } } }` // 1 REST call

	// burst sends n requests of m, alternating replicas, and counts what
	// each admitted; any answer but data or RATE_LIMITED fails the test.
	burst := func(t *testing.T, m merchant, n int) (admitted [2]int, elapsed time.Duration) {
		t.Helper()
		start := time.Now()
		for i := range n {
			r := clients[i%2].Post(t, m.Header(), q, nil)
			switch {
			case len(r.Errors) == 0:
				admitted[i%2]++
			case r.Errors[0].Code() == "RATE_LIMITED":
				if ra, _ := r.Errors[0].Extensions["retryAfter"].(float64); ra < 1 || r.Header.Get("Retry-After") == "" {
					t.Fatalf("RATE_LIMITED without a wait: %+v %v", r.Errors[0], r.Header)
				}
			default:
				t.Fatalf("request %d of %s: %+v", i, m.Name, r.Errors)
			}
		}
		return admitted, time.Since(start)
	}
	// At most the burst plus one call a second of refill (and one for a
	// partly refilled unit).
	within := func(elapsed time.Duration) int { return 20 + int(math.Ceil(elapsed.Seconds())) + 1 }

	fake.Reset()
	admitted, elapsed := burst(t, fake.A, 60)
	sum := admitted[0] + admitted[1]
	t.Logf("shared: A admitted %d + %d = %d of 60 in %v (budget: 20 + 1/s)", admitted[0], admitted[1], sum, elapsed.Round(time.Millisecond))
	if sum < 20 || sum > within(elapsed) {
		t.Fatalf("two replicas admitted %d of A's requests in %v; the shared budget admits 20 to %d", sum, elapsed, within(elapsed))
	}
	if admitted[0] == 0 || admitted[1] == 0 {
		t.Fatalf("one replica admitted nothing: %v", admitted)
	}
	if calls := fake.CallsBy("A"); calls != sum {
		t.Fatalf("the REST API got %d calls for A, want %d (one per admitted request, none for a refused one)", calls, sum)
	}
	b, _ := burst(t, fake.B, 10)
	if b[0]+b[1] != 10 {
		t.Fatalf("B, whose budget is its own, was refused: %v of 10 admitted", b)
	}

	// Redis stops: each replica decides from its own memory, where A's
	// budget was never spent: up to a burst each, and still refusals.
	rds.Stop()
	for i, c := range clients {
		admitted := 0
		start := time.Now()
		for range 30 {
			t0 := time.Now()
			r := c.Post(t, fake.A.Header(), q, nil)
			if d := time.Since(t0); d > 2*time.Second {
				t.Fatalf("replica %d took %v to answer with Redis down", i, d)
			}
			switch {
			case len(r.Errors) == 0:
				admitted++
			case r.Errors[0].Code() != "RATE_LIMITED":
				t.Fatalf("replica %d with Redis down: %+v", i, r.Errors)
			}
		}
		elapsed := time.Since(start)
		t.Logf("Redis down: replica %d admitted %d of A's 30 in %v", i, admitted, elapsed.Round(time.Millisecond))
		if admitted < 20 || admitted > within(elapsed) {
			t.Fatalf("replica %d with Redis down admitted %d of 30 in %v; its local budget admits 20 to %d", i, admitted, elapsed, within(elapsed))
		}
		c.Post(t, fake.B.Header(), q, nil).WantNoErrors(t)
		if m := replicas[i].Metrics(); !strings.Contains(m, `paygraph_rate_limit_decisions_total{outcome="fallback_limited"}`) {
			t.Fatalf("replica %d counts no fallback decision:\n%s", i, m)
		}
	}
}

// TestTrustedDocumentsSIGHUP: an enforcing gateway process gets a new
// manifest by SIGHUP while clients keep asking for a document listed in
// both: none of their requests fails, and the added document is served
// after the reload.
func TestTrustedDocumentsSIGHUP(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs the gateway binary: not in -short")
	}
	const (
		listed = "query Listed { payments(first: 1) { nodes { id } } }"
		added  = "query Added { payments(first: 2) { nodes { status } } }"
	)
	path := filepath.Join(t.TempDir(), "persisted_queries.json")
	writeRelayManifest(t, path, map[string]string{"listed": listed})
	fake := newRESTFake(t)
	p := startGateway(t, map[string]string{
		"REST_BASE_URL": fake.URL, "TRUSTED_DOCUMENTS": path, "TRUSTED_DOCUMENTS_MODE": "enforce",
		"RATE_LIMIT_REST_CALLS_PER_SECOND": "0", "RATE_LIMIT_REQUESTS_PER_SECOND": "0",
	})
	c := gqltest.Client{URL: p.URL, HTTP: p.client, Forbidden: []string{secretA}}
	byID := func(id string) *gqltest.Response {
		return c.PostBody(t, fake.A.Header(), map[string]any{"documentId": id})
	}
	byID("added").WantCode(t, "PERSISTED_QUERY_NOT_LISTED")

	var (
		wg       sync.WaitGroup
		stop     atomic.Bool
		served   atomic.Int64
		failures = make(chan string, 4)
	)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				r := byID("listed")
				if r.Status != http.StatusOK || len(r.Errors) > 0 {
					failures <- fmt.Sprintf("status %d, errors %+v", r.Status, r.Errors)
					return
				}
				served.Add(1)
			}
		}()
	}
	for i := 1; i <= 5; i++ {
		writeRelayManifest(t, path, map[string]string{"listed": listed, "added": added, fmt.Sprint("v", i): listed + " # v" + fmt.Sprint(i)})
		if err := syscall.Kill(p.PID, syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for strings.Count(p.Output(), "trusted documents reloaded") < i {
			if time.Now().After(deadline) {
				t.Fatalf("SIGHUP %d: no reload in the log:\n%s", i, p.Output())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if !strings.Contains(p.Output(), `"operations":3`) {
		t.Fatalf("the reload did not log the new manifest's 3 operations:\n%s", p.Output())
	}
	stop.Store(true)
	wg.Wait()
	close(failures)
	for f := range failures {
		t.Fatalf("a request failed while the manifest was reloaded: %s", f)
	}
	t.Logf("%d requests served across 5 SIGHUP reloads", served.Load())
	byID("added").WantNoErrors(t)
	if !p.Alive() {
		t.Fatal("the gateway exited on SIGHUP")
	}
}

// writeRelayManifest writes Relay's persisted_queries.json format, by a
// rename (as a ConfigMap update swaps the file).
func writeRelayManifest(t *testing.T, path string, docs map[string]string) {
	t.Helper()
	b, _ := json.Marshal(docs)
	if err := os.WriteFile(path+".tmp", b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}
