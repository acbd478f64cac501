package e2e

// A flood from a process of its own: the test binary run again with
// -test.run=^TestFloodProcess$, which sends one request over and over to
// the gateway and writes what came back to a file. A flood sent from the
// test's own process would share its Go scheduler with the merchant whose
// latency the test measures: on two cores, 16 busy senders delay the
// measuring goroutine itself by tens of milliseconds, which is the test's
// latency, not the gateway's. In a process of its own the flood competes
// with the gateway and the prober only for the CPU, as a real client does.

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// floodSpec is one flood.
type floodSpec struct {
	URL  string
	Body []byte // the POST /graphql body
	Path string // instead: GET this path (no credentials)
	// Bodies, instead of Body: the flood sends Bodies[k % len(Bodies)]
	// in the k-th Slice after Start (and starts at Start), so that a
	// prober can compare them slice by slice, under the same noise. A
	// nil body with no path is an idle kind: nothing is sent in its
	// slices (the unloaded baseline of the others).
	Bodies  []json.RawMessage
	Paths   []string // Paths[k] != "": the k-th kind is a GET of it instead
	Slice   time.Duration
	Start   time.Time
	Header  http.Header // sent with each request
	Fresh   bool        // also a credential pair never seen, each request
	Source  string      // source address ("": the kernel's choice)
	Workers int         // of each kind (Bodies), which sends only in its slices
	Rate    int         // requests per second offered by a kind's workers together, in its slices; 0: as fast as they go
	Window  time.Duration
	// Nice runs the flood process at this niceness (0: as the test): an
	// attacker elsewhere does not spend the gateway host's CPU; here the
	// attacker shares the test machine's two cores with the gateway and
	// the prober, and unniced its own client work (not the gateway's)
	// delays them.
	Nice int
}

// floodReport is what a flood saw.
type floodReport struct {
	Sent     int
	Outcomes map[string]int
	Largest  int64         // the largest answer, in bytes
	CPU      time.Duration // the flood process's CPU time (filled in by wait)
}

const floodEnv = "PAYGRAPH_E2E_FLOOD"

// startFlood starts the flood process; wait waits for it to end and
// returns its report.
func startFlood(t *testing.T, spec floodSpec) (wait func() floodReport) {
	t.Helper()
	dir := t.TempDir()
	b, _ := json.Marshal(spec)
	specFile, reportFile := filepath.Join(dir, "spec.json"), filepath.Join(dir, "report.json")
	if err := os.WriteFile(specFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{os.Args[0], "-test.run=^TestFloodProcess$", "-test.count=1"}
	if spec.Nice > 0 {
		nice, err := exec.LookPath("nice")
		if err != nil {
			t.Fatalf("the flood process runs under nice: %v", err)
		}
		args = append([]string{nice, "-n", strconv.Itoa(spec.Nice)}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), floodEnv+"="+specFile+","+reportFile)
	out := new(lockedBuffer)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the flood process: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	return func() floodReport {
		t.Helper()
		select {
		case <-done:
		case <-time.After(spec.Window + 30*time.Second):
			t.Fatalf("the flood process did not end:\n%s", out.String())
		}
		var r floodReport
		b, err := os.ReadFile(reportFile)
		if err != nil || json.Unmarshal(b, &r) != nil {
			t.Fatalf("the flood process's report: %v\n%s", err, out.String())
		}
		r.CPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		return r
	}
}

// TestFloodProcess is the flood process of startFlood; run alone it skips.
func TestFloodProcess(t *testing.T) {
	files := os.Getenv(floodEnv)
	if files == "" {
		t.Skip("the flood process of startFlood: run by other tests")
	}
	specFile, reportFile, _ := strings.Cut(files, ",")
	b, err := os.ReadFile(specFile)
	if err != nil {
		t.Fatal(err)
	}
	var spec floodSpec
	if err := json.Unmarshal(b, &spec); err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{MaxIdleConnsPerHost: spec.Workers}
	if spec.Source != "" {
		tr.DialContext = (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(spec.Source)}}).DialContext
	}
	p := &proc{URL: spec.URL, client: &http.Client{Transport: tr}}
	var got tally
	var largest atomic.Int64
	var made, pairs atomic.Int64
	send := func(k int) {
		made.Add(1)
		i := int(pairs.Add(1)) - 1
		q := gqlReq{body: spec.Body, Header: spec.Header.Clone(), Timeout: 10 * time.Second}
		kind, path := "", spec.Path
		if len(spec.Bodies) > 0 {
			q.body, kind = spec.Bodies[k], strconv.Itoa(k)+":"
			if k < len(spec.Paths) {
				path = spec.Paths[k]
			}
		}
		if path != "" {
			code, b := p.get(path, 10*time.Second)
			got.add(kind + "http-" + strconv.Itoa(code))
			storeMax(&largest, int64(len(b)))
			return
		}
		if q.Header == nil {
			q.Header = http.Header{}
		}
		if spec.Fresh {
			q.Header.Set("X-Api-Key", fmt.Sprintf("ak_test_flood%08d", i))
			q.Header.Set("X-Api-Secret", fmt.Sprintf("sk_test_flood%08d", i))
		}
		r := p.do(context.Background(), q)
		got.add(kind + r.Outcome())
		storeMax(&largest, r.Size)
	}
	time.Sleep(time.Until(spec.Start))
	// Each kind has workers of its own, which send only in its slices: a
	// kind whose answers are slow (a refusal held for its Retry-After,
	// gqlhttp/refusaldelay.go) holds up its own senders, never the other
	// kind's, so each kind is as fast a flood as it can be. Paced, a
	// kind's ticks outside its slices are dropped, so that each kind is
	// offered Rate in its slices and no backlog bursts at their start;
	// closed-loop (Rate 0), a kind's workers wait for its next slice.
	var wg sync.WaitGroup
	for k := range max(1, len(spec.Bodies)) {
		if spec.idle(k) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if spec.Rate <= 0 {
				hammer(spec.Workers, 0, spec.Window, func(int) {
					if len(spec.Bodies) > 0 && !spec.waitForKind(k) {
						return
					}
					send(k)
				})
				return
			}
			paced(spec.Workers, spec.Rate, spec.Window, func(int) {
				if len(spec.Bodies) > 0 && spec.kindAt(time.Now()) != k {
					return // a tick of another kind's slice: not offered
				}
				send(k)
			})
		}()
	}
	wg.Wait()
	sent := int(made.Load())
	got.mu.Lock()
	out, _ := json.Marshal(floodReport{Sent: sent, Outcomes: got.m, Largest: largest.Load()})
	got.mu.Unlock()
	if err := os.WriteFile(reportFile, out, 0o600); err != nil {
		t.Fatal(err)
	}
}

// waitForKind sleeps until a slice of kind k (now, or its next one); false
// when the window ends first.
func (s floodSpec) waitForKind(k int) bool {
	now := time.Now()
	if s.kindAt(now) == k && now.Before(s.Start.Add(s.Window)) {
		return true
	}
	n := len(s.Bodies)
	cur := int(now.Sub(s.Start) / s.Slice)
	next := cur + ((k-cur%n)+n)%n
	if next == cur {
		next += n
	}
	at := s.Start.Add(time.Duration(next) * s.Slice)
	if !at.Before(s.Start.Add(s.Window)) {
		return false
	}
	time.Sleep(time.Until(at))
	return true
}

// idle reports whether the k-th kind of Bodies sends nothing (a nil body,
// null once through the spec file, and no path).
func (s floodSpec) idle(k int) bool {
	b := s.Bodies
	return len(b) > 0 && (len(b[k]) == 0 || string(b[k]) == "null") && (k >= len(s.Paths) || s.Paths[k] == "")
}

// kindAt is the index in Bodies of the body sent at t.
func (s floodSpec) kindAt(t time.Time) int {
	if len(s.Bodies) == 0 || t.Before(s.Start) {
		return 0
	}
	return int(t.Sub(s.Start)/s.Slice) % len(s.Bodies)
}

// paced calls send(i) at rate per second for window from workers
// goroutines; a tick that finds every worker busy is dropped (the flood
// is then as fast as they are). It returns how many were sent.
func paced(workers, rate int, window time.Duration, send func(i int)) int {
	ticks := make(chan int, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range ticks {
				send(i)
			}
		}()
	}
	sent := 0
	start := time.Now()
	tk := time.NewTicker(time.Second / time.Duration(rate))
	for time.Since(start) < window {
		<-tk.C
		select {
		case ticks <- sent:
			sent++
		default: // the workers are behind
		}
	}
	tk.Stop()
	close(ticks)
	wg.Wait()
	return sent
}

// storeMax raises a to v if v is larger.
func storeMax(a *atomic.Int64, v int64) {
	for {
		l := a.Load()
		if v <= l || a.CompareAndSwap(l, v) {
			return
		}
	}
}
