package e2e

// TestUnacceptedCredentials is the proof of issue 22's item 1 ("a caller
// the REST API has not accepted is not a merchant"): the gateway process
// under a flood of nodes(ids: [100 ids]) requests, each with a freshly
// invented credential pair, sent from 127.0.0.2 by a process of its own
// (flood_test.go), while merchant B (on 127.0.0.1, and not yet accepted:
// the gateway has just started) looks up one payment at a time. It prints
// today's figures (the bounds on unaccepted pairs off:
// REST_UNACCEPTED_CALLS_PER_SECOND=0) next to the new ones, and checks the
// new ones: the invented pairs' REST calls within the shared budget
// (burst + rate x t), and B's p99 under the nodes flood against its p99
// under an equally fast flood that makes no REST call ({ __typename } with
// fresh pairs). The two floods take turns every 100 ms in one run, and
// B's lookups, back to back, are counted by the flood they fell in, so
// that the noise of a machine shared with other jobs falls on both alike
// and each p99 is read from thousands of lookups (only ratios of one run
// are compared; see p99Factor for the bound).
//
//	go test -count=1 -run TestUnacceptedCredentials -v ./e2e/

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Issue 22's item 1, at CI size.
const (
	floodWindow = 4 * time.Second // each flood's; alternating ones take turns
	// floodSlice is short, so that a burst of the machine's other work
	// (longer than two slices) falls on both floods alike; a multiple of
	// two slices divides the refusal delay (1 s), so that a held answer of
	// one flood is released in that flood's slices.
	floodSlice = 100 * time.Millisecond
	floodRate  = 100 // requests per second of the flood, both kinds
	// floodWorkers bounds a kind's requests in flight: each kind is paced
	// at floodRate (open loop: a tick is dropped only when all are busy).
	// The gateway holds each refusal of an invented pair for up to 1 s
	// (REFUSAL_DELAY_MAX), so the nodes flood has up to floodRate answers
	// held at once; with 8 workers a kind it achieved 15-18 req/s against
	// the { __typename } flood's 88-100, not an equally fast flood. At 128
	// both achieve 95-100 req/s, checked within rateSpread of each other.
	floodWorkers = 128
	rateSpread   = 0.10
	// p99Factor is the bound on B's p99 under the nodes flood over
	// its p99 under the { __typename } flood. B looks up back to back
	// (one at a time), 1,800-6,300 lookups under each flood, so that a
	// p99 is the 18th- to 63rd-worst lookup, not the 2nd or 3rd. At
	// equally fast floods (128 workers) it measured 0.90x-1.96x (median
	// 1.40x, 7 of 29 runs above 1.5x) while the ~49 nodes requests the
	// budgets admit each answered 100 UNAUTHENTICATED errors (1.1-1.7 ms
	// of the gateway's CPU each); with the field's one error instead
	// (graph's nodes resolver) 0.91x-1.16x. With 8 workers (the nodes
	// flood at 15-18 req/s) it measured 0.83x-1.38x in 40 runs; with a
	// 10 ms pause between lookups and 500 ms slices 0.7x-3.2x, and the
	// check was 3x (docs/reliability.md).
	p99Factor = 1.5
	// The defaults of REST_UNACCEPTED_CALLS_PER_SECOND and its burst.
	unacceptedRate  = 20
	unacceptedBurst = 2 * unacceptedRate
)

func TestUnacceptedCredentials(t *testing.T) {
	if testing.Short() {
		t.Skip("floods the gateway binary for about 15 s: not in -short")
	}
	if !loopbackAlias(t) {
		t.Skip("127.0.0.2 is not usable as a source address here")
	}
	fake := newRESTFake(t)
	figs := &figures{}
	t.Cleanup(func() { t.Logf("issue 22, unaccepted credentials:\n%s", figs.table()) })
	ids := make([]string, 100)
	for i := range ids {
		ids[i] = strconv.Quote(fmt.Sprintf("pay_prod_%032x", i))
	}
	nodes := `{ nodes(ids: [` + strings.Join(ids, ",") + `]) { id } }`

	run := func(t *testing.T, env map[string]string, floods ...string) floodResult {
		p := startGateway(t, env)
		fake.Reset()
		return runFlood(t, p, fake, floods...)
	}
	base := backToBack(map[string]string{"REST_BASE_URL": fake.URL})
	today := backToBack(map[string]string{"REST_BASE_URL": fake.URL, "REST_UNACCEPTED_CALLS_PER_SECOND": "0"})

	var before, after floodResult
	t.Run("today", func(t *testing.T) { before = run(t, today, nodes) })
	t.Run("nodes_and_typename_floods", func(t *testing.T) { after = run(t, base, nodes, `{ __typename }`) })

	secs := after.window.Seconds()
	budget := unacceptedBurst + int(unacceptedRate*secs+0.999)
	figs.info(t, "1", "today: nodes flood ("+strconv.Itoa(floodRate)+" req/s, "+before.window.Round(100*time.Millisecond).String()+"), requests sent / REST calls of invented pairs",
		fmt.Sprintf("%d / %d", before.sent, before.inventedCalls))
	figs.info(t, "1", "today: the nodes flood's achieved rate", fmt.Sprintf("%.1f req/s", before.achieved()[0]))
	figs.info(t, "1", "today: B's p50 / p99 under the nodes flood",
		ms(percentile(before.probes[0], 50))+" / "+ms(percentile(before.probes[0], 99)))
	figs.check(t, "1", "nodes and { __typename } floods ("+strconv.Itoa(floodRate)+" req/s, "+after.window.Round(100*time.Millisecond).String()+", alternating every "+floodSlice.String()+"): requests sent / REST calls of invented pairs",
		fmt.Sprintf("%d / %d", after.sent, after.inventedCalls),
		fmt.Sprintf("calls <= %d (burst %d + %d/s x t)", budget, unacceptedBurst, unacceptedRate), after.inventedCalls <= budget)
	rates := after.achieved()
	figs.check(t, "1", "the floods' achieved rates in their slices: nodes / { __typename }",
		fmt.Sprintf("%.1f / %.1f req/s (%d workers each)", rates[0], rates[1], floodWorkers),
		fmt.Sprintf("within %.0f %%", 100*rateSpread), len(rates) == 2 && rates[0] >= (1-rateSpread)*rates[1] && rates[1] >= (1-rateSpread)*rates[0])
	p99, ref := percentile(after.probes[0], 99), percentile(after.probes[1], 99)
	figs.info(t, "1", "B's lookups under the nodes flood: p50 / p90 / p99 / max", spread(after.probes[0]))
	figs.info(t, "1", "B's lookups under the { __typename } flood: p50 / p90 / p99 / max", spread(after.probes[1]))
	figs.check(t, "1", "B's p99 under the nodes flood / under the { __typename } flood",
		fmt.Sprintf("%s / %s (%.2fx; %d and %d lookups, %d across a switch not counted)", us(p99), us(ref), float64(p99)/float64(max(ref, 1)), len(after.probes[0]), len(after.probes[1]), after.straddled),
		fmt.Sprintf("<= %.1fx", p99Factor), len(after.probes[0]) >= minLookups && len(after.probes[1]) >= minLookups && float64(p99) <= p99Factor*float64(ref))
	figs.check(t, "1", "B's lookups under the floods", outcomes(after.probeOutcomes),
		"all ok", after.probeFailed == 0)
	figs.info(t, "1", "the floods' answers (0: nodes, 1: { __typename }); the gateway's CPU time in their slices",
		fmt.Sprintf("%s; %s / %s", outcomes(after.floodOutcomes), ms(after.cpu[0]), ms(after.cpu[1])))
}

type floodResult struct {
	sent          int
	window        time.Duration
	floodWindow   time.Duration // the flood's own, all kinds
	inventedCalls int
	probes        [][]time.Duration // B's lookups, by the flood they ran under
	probeFailed   int
	probeOutcomes map[string]int
	floodOutcomes map[string]int
	cpu           []time.Duration // the gateway's CPU time, by flood
	floodCPU      time.Duration   // the flood process's CPU time
	largest       int64           // the flood's largest answer
	straddled     int             // B's lookups that began in one kind's slice and ended in another's
}

// achieved is each kind's requests a second in its own slices (the
// flood's window shared equally by its kinds).
func (r floodResult) achieved() []float64 {
	kinds := len(r.probes)
	n := make([]int, kinds)
	for o, c := range r.floodOutcomes {
		k, _, _ := strings.Cut(o, ":")
		if i, err := strconv.Atoi(k); err == nil && i < kinds {
			n[i] += c
		}
	}
	out := make([]float64, kinds)
	for i := range n {
		out[i] = float64(n[i]) / (r.floodWindow.Seconds() / float64(kinds))
	}
	return out
}

// minLookups is the fewest lookups of B a p99 is read from: its 10th-worst
// lookup at least, not one outlier of a machine shared with other jobs.
const minLookups = 1000

// backToBack lifts merchant B's own rate limits (RATE_LIMIT_REQUESTS_* and
// RATE_LIMIT_REST_*: 200 requests a second by default) in env, so that B
// can look up back to back and a p99 is read from thousands of lookups.
// It changes nothing for the floods: every pair of theirs is fresh, and a
// fresh pair's one request is far within those limits.
func backToBack(env map[string]string) map[string]string {
	for _, k := range []string{"RATE_LIMIT_REQUESTS_PER_SECOND", "RATE_LIMIT_REST_CALLS_PER_SECOND"} {
		env[k] = "1000000"
	}
	return env
}

// spread is a latency distribution's p50 / p90 / p99 / max and its count.
func spread(ds []time.Duration) string {
	return fmt.Sprintf("%s / %s / %s / %s (%d lookups)", us(percentile(ds, 50)), us(percentile(ds, 90)), us(percentile(ds, 99)), us(percentile(ds, 100)), len(ds))
}

// us is a latency to 0.01 ms.
func us(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

// runFlood sends the queries at floodRate from 127.0.0.2 (from a process
// of its own: flood_test.go), each request with a pair never seen before,
// for floodWindow each (several queries take turns, floodSlice each, so
// that the machine's noise falls on all alike), while B (from 127.0.0.1)
// looks up one payment at a time.
func runFlood(t *testing.T, p *proc, fake *restFake, queries ...string) floodResult {
	spec := floodSpec{URL: p.URL, Fresh: true, Source: "127.0.0.2", Workers: floodWorkers, Rate: floodRate,
		Window: floodWindow * time.Duration(len(queries)), Slice: floodSlice}
	for _, q := range queries {
		spec.Bodies = append(spec.Bodies, gqlReq{Query: q}.encoded().body)
	}
	return probeUnder(t, p, fake, spec)
}

// probeUnder runs the flood of spec (its Bodies taking turns, Slice each,
// from 300 ms on) while B (from 127.0.0.1) looks up one payment at a
// time, back to back; B's latencies and the gateway's CPU time are kept
// by the kind of flood they fell in. A lookup that began in one kind's
// slice and ended in another's is counted in none (its outcome is still
// checked): it measured both; so are those of the warm-up (below).
func probeUnder(t *testing.T, p *proc, fake *restFake, spec floodSpec) floodResult {
	kinds := len(spec.Bodies)
	res := floodResult{probeOutcomes: map[string]int{}, probes: make([][]time.Duration, kinds), cpu: make([]time.Duration, kinds)}
	spec.Start = time.Now().Add(300 * time.Millisecond)
	wait := startFlood(t, spec)
	end := spec.Start.Add(spec.Window)
	// The gateway's CPU time, read at each slice's end.
	cpuDone := make(chan struct{})
	go func() {
		defer close(cpuDone)
		time.Sleep(time.Until(spec.Start))
		last := p.CPUTime()
		for k := 1; spec.Start.Add(time.Duration(k)*spec.Slice).Compare(end) <= 0; k++ {
			time.Sleep(time.Until(spec.Start.Add(time.Duration(k) * spec.Slice)))
			now := p.CPUTime()
			res.cpu[(k-1)%kinds] += now - last
			last = now
		}
	}()
	q, want := probeQuery(fake)
	q = q.encoded()
	// B looks up from now on, but its lookups count from the second round
	// of slices on: until then the flood process starts, the floods open
	// their connections and B its own (a fresh gateway's first requests),
	// which would fall on the first kind alone.
	counted := spec.Start.Add(time.Duration(kinds) * spec.Slice)
	for time.Now().Before(end) {
		at := time.Now()
		k := spec.kindAt(at)
		d, ok, outcome := probe(p, q, want, 10*time.Second)
		res.probeOutcomes[outcome]++
		if !ok {
			res.probeFailed++
		}
		if at.Before(counted) {
			continue
		}
		if spec.kindAt(at.Add(d)) != k {
			res.straddled++
			continue
		}
		res.probes[k] = append(res.probes[k], d)
	}
	<-cpuDone
	rep := wait()
	res.sent, res.floodOutcomes, res.largest, res.floodCPU = rep.Sent, rep.Outcomes, rep.Largest, rep.CPU
	res.window, res.floodWindow = time.Since(spec.Start), spec.Window
	res.inventedCalls = fake.CallsBy("")
	return res
}

// loopbackAlias reports whether 127.0.0.2 can be a source address (Linux
// routes all of 127/8 to lo).
func loopbackAlias(t *testing.T) bool {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return false
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
		}
	}()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}, Timeout: time.Second}
	c, err := d.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Logf("dial from 127.0.0.2: %v", err)
		return false
	}
	c.Close()
	return true
}

// acceptMerchants has A and B each look up one of their payments, so that
// the gateway knows them as merchants (issue 22) before a test measures
// something else about them: all of a test's callers share 127.0.0.1, and
// a merchant the REST API never answered 2xx (A's calls all failing, say)
// would spend that address's budget for unaccepted pairs, B's included.
func acceptMerchants(t *testing.T, p *proc, fake *restFake) {
	t.Helper()
	for _, m := range []merchant{fake.A, fake.B} {
		id := fake.sb.Payments(m.biz.APIKey)[0].ID
		r := p.do(context.Background(), gqlReq{Query: fmt.Sprintf(`{ payment(id: %q) { id } }`, id), Header: m.Header()})
		if r.Outcome() != "ok" {
			t.Fatalf("merchant %s's first lookup: %s", m.Name, r.Outcome())
		}
	}
}

// TestIdleConnections is issue 22's item 6: 10,000 clients each send one
// /healthz and keep their connection open. Today's figure is the gateway
// without a cap (HTTP_MAX_CONNECTIONS at its largest); the new one, with
// the default cap, must stay under 150 MiB of peak RSS.
//
//	go test -count=1 -run TestIdleConnections -v ./e2e/
func TestIdleConnections(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 20,000 connections to the gateway binary: not in -short")
	}
	const conns = 10000
	figs := &figures{}
	t.Cleanup(func() { t.Logf("issue 22, idle connections:\n%s", figs.table()) })
	for _, tc := range []struct {
		name string
		max  string
	}{
		{"today (no cap)", strconv.Itoa(1 << 20)},
		{"default cap", ""},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			p := startGateway(t, map[string]string{"HTTP_MAX_CONNECTIONS": tc.max})
			served, closed := idleClients(t, p, conns)
			peak := p.PeakRSS(t)
			got := fmt.Sprintf("%s (%d answered, %d later closed by the gateway)", mib(peak), served, closed)
			if tc.max != "" {
				figs.info(t, "6", tc.name+": peak RSS with 10,000 idle connections", got)
				return
			}
			figs.check(t, "6", tc.name+": peak RSS with 10,000 idle connections", got, "< 150 MiB", peak < maxRSS)
			// A client that comes now is served.
			if code, _ := p.get("/healthz", 5*time.Second); code != http.StatusOK {
				t.Errorf("/healthz after the idle connections: %d", code)
			}
		})
	}
}

// idleClients opens n connections to p, sends /healthz on each and keeps
// them open until the test ends; it returns how many were answered, and
// how many the gateway had closed by the end.
func idleClients(t *testing.T, p *proc, n int) (served, closed int) {
	addr := strings.TrimPrefix(p.URL, "http://")
	conns := make([]net.Conn, n)
	var ok atomic.Int64
	var wg sync.WaitGroup
	next := atomic.Int64{}
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				c, err := net.DialTimeout("tcp", addr, 5*time.Second)
				if err != nil {
					continue
				}
				conns[i] = c
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				if _, err := c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: gw\r\n\r\n")); err != nil {
					continue
				}
				resp, err := http.ReadResponse(bufio.NewReader(c), nil)
				if err != nil {
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				_ = c.SetDeadline(time.Time{})
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	})
	time.Sleep(200 * time.Millisecond) // the gateway's closes arrive
	for _, c := range conns {
		if c == nil {
			continue
		}
		_ = c.SetReadDeadline(time.Now().Add(time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err == io.EOF {
			closed++
		}
	}
	return int(ok.Load()), closed
}
