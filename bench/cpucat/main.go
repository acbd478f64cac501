// Command cpucat sorts the samples of CPU profiles taken by `go run ./bench
// -profile DIR` into categories (syscalls, malloc, GC, the scheduler,
// net/http's server and client, JSON, gqlgen, graph, the REST client, the
// edge, the access log, metrics, the proxy's own code) and prints one
// markdown table of CPU ms per query, a column per profile, so that the
// gateway's CPU per query can be set against the hand-written proxy's
// category by category (issue 25).
//
//	go run ./bench/cpucat DIR/cpu-single-c16-0s.pprof=QUERIES DIR/cpu-proxy-single-c16-0s.pprof=QUERIES ...
//
// QUERIES is the number of queries served while the profile ran (the
// cell's req/s times the profile's seconds, which the bench takes as
// -duration minus 1 s); without it the column is in ms of CPU. A sample
// goes to the first rule that claims it: the runtime's own work first (GC
// anywhere on the stack, then malloc, then the scheduler, then a system
// call), then the innermost frame of a package or file that has an owner
// (encoding/json called by restclient is JSON; net/http called by the
// REST client is net/http's client); what no rule claims is "other".
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// The categories, in the table's order.
var categories = []string{
	"syscalls (read, write, ...)",
	"malloc",
	"GC (mark, sweep, assists, write barriers)",
	"scheduler (park, wake, netpoll, futex, new goroutines)",
	"net/http server",
	"HTTP client of the REST calls (fasthttp or net/http, the gateway's pools of them)",
	"JSON: encoding/json",
	"JSON: the gateway's own readers and writers",
	"gqlgen, gqlparser",
	"graph (resolvers, loaders, fast paths, limits, dataloader)",
	"restclient beyond net/http (gobreaker)",
	"edge middlewares (gqlhttp, gateway, chi, gzhttp, cors)",
	"access log (slog, observe)",
	"metrics (prometheus, observe, its REST transport)",
	"the proxy's own code",
	"other (runtime, unowned stdlib)",
}

const (
	catSyscall = iota
	catMalloc
	catGC
	catSched
	catHTTPServer
	catHTTPClient
	catJSON
	catOwnJSON
	catGqlgen
	catGraph
	catREST
	catEdge
	catAccessLog
	catMetrics
	catProxy
	catOther
)

// frame is one line of a stack: the function and its file.
type frame struct{ fn, file string }

func hasPrefix(stack []frame, prefixes ...string) bool {
	for _, f := range stack {
		for _, p := range prefixes {
			if strings.HasPrefix(f.fn, p) {
				return true
			}
		}
	}
	return false
}

// classify returns the category of one sample's stack (leaf first).
func classify(stack []frame) int {
	switch {
	case hasPrefix(stack, "runtime.gc", "runtime.bgsweep", "runtime.bgscavenge", "runtime.scanobject",
		"runtime.markroot", "runtime.wbBuf", "runtime.sweepone", "runtime.(*sweepLocked)", "runtime.(*mspan).sweep",
		"runtime.scanstack", "runtime.greyobject", "runtime.bulkBarrier"):
		return catGC
	case hasPrefix(stack, "runtime.mallocgc"):
		return catMalloc
	case hasPrefix(stack, "runtime.schedule", "runtime.findRunnable", "runtime.park_m", "runtime.netpoll",
		"runtime.futex", "runtime.notesleep", "runtime.notewakeup", "runtime.wakep", "runtime.ready",
		"runtime.goready", "runtime.newproc", "runtime.stopm", "runtime.startm", "runtime.mPark",
		"runtime.sysmon", "runtime.handoffp", "runtime.goexit0", "runtime.gopark", "runtime.runqgrab",
		"runtime.stealWork", "runtime.usleep", "runtime.osyield", "runtime.exitsyscall0"):
		return catSched
	case hasPrefix(stack, "syscall.", "internal/runtime/syscall", "runtime/internal/syscall", "runtime.write1", "runtime.read"):
		return catSyscall
	}
	client := hasPrefix(stack, "net/http.(*Transport)", "net/http.(*persistConn)", "net/http.(*Client)",
		"net/http.send", "net/http.(*transferWriter)", "net/http.(*Request).write", "net/http.ReadResponse")
	for _, f := range stack {
		if c, ok := owner(f, client); ok {
			return c
		}
	}
	return catOther
}

// owner is the category of a frame whose package or file has one.
func owner(f frame, client bool) (int, bool) {
	fn, file := f.fn, f.file
	has := func(s string) bool { return strings.Contains(file, s) }
	switch {
	case strings.HasPrefix(fn, "encoding/json."):
		return catJSON, true
	case strings.HasPrefix(fn, "main.") && has("/bench/"):
		return catProxy, true
	case strings.HasPrefix(fn, "paygraph/restclient.") && (has("restclient/wirefast.go") || has("restclient/decode.go")),
		strings.HasPrefix(fn, "paygraph/gqlhttp.") && has("gqlhttp/postdecode.go"), strings.HasPrefix(fn, "paygraph/gqlhttp.appendMarshalled"),
		strings.HasPrefix(fn, "paygraph/graph.") && (has("graph/fast.go") || has("graph/fast_gen.go") || has("graph/receiptjson.go")):
		return catOwnJSON, true
	case strings.HasPrefix(fn, "log/slog."), strings.HasPrefix(fn, "paygraph/observe.") && (has("observe/accessline.go") || has("observe/logging.go")),
		strings.HasPrefix(fn, "paygraph/gateway.") && has("gateway/logging.go"):
		return catAccessLog, true
	case strings.HasPrefix(fn, "github.com/prometheus/"), strings.HasPrefix(fn, "paygraph/observe.") && (has("observe/metrics.go") || has("observe/stats.go")):
		return catMetrics, true
	case strings.HasPrefix(fn, "paygraph/gateway.") && has("gateway/transport.go"),
		strings.HasPrefix(fn, "github.com/valyala/fasthttp"), strings.HasPrefix(fn, "paygraph/fasttransport."):
		return catHTTPClient, true // the REST transport's pools (one a credential pair)
	case strings.HasPrefix(fn, "github.com/99designs/gqlgen"), strings.HasPrefix(fn, "github.com/vektah/gqlparser"):
		return catGqlgen, true
	case strings.HasPrefix(fn, "paygraph/graph"), strings.HasPrefix(fn, "github.com/graph-gophers/dataloader"):
		return catGraph, true
	case strings.HasPrefix(fn, "paygraph/restclient"), strings.HasPrefix(fn, "github.com/sony/gobreaker"):
		return catREST, true
	case strings.HasPrefix(fn, "paygraph/"), strings.HasPrefix(fn, "github.com/go-chi/"),
		strings.HasPrefix(fn, "github.com/klauspost/compress/gzhttp"), strings.HasPrefix(fn, "github.com/rs/cors"):
		return catEdge, true // gqlhttp, gateway, the leaves it wires (ratelimit, apqstore, ...)
	case strings.HasPrefix(fn, "net/http."):
		if client {
			return catHTTPClient, true
		}
		return catHTTPServer, true
	}
	return 0, false
}

// readTraces parses `go tool pprof -traces -lines` output into the CPU
// time of each category.
func readTraces(r io.Reader) (byCat []time.Duration, total time.Duration, err error) {
	byCat = make([]time.Duration, len(categories))
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var stack []frame
	var value time.Duration
	flush := func() {
		if len(stack) > 0 {
			byCat[classify(stack)] += value
			total += value
		}
		stack, value = stack[:0], 0
	}
	inSamples := false
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "-----------+") {
			flush()
			inSamples = true
			continue
		}
		if !inSamples || len(line) < 13 {
			continue
		}
		head, rest := strings.TrimSpace(line[:10]), strings.TrimSpace(line[10:])
		if strings.HasSuffix(head, ":") || strings.HasPrefix(rest, ":") {
			continue // a sample's label
		}
		if head != "" {
			d, err := time.ParseDuration(head)
			if err != nil {
				return nil, 0, fmt.Errorf("sample value %q: %w", head, err)
			}
			value = d
		}
		rest = strings.TrimSuffix(rest, " (inline)")
		fn, file := rest, ""
		if i := strings.LastIndexByte(rest, ' '); i > 0 {
			fn, file = rest[:i], rest[i+1:]
		}
		stack = append(stack, frame{fn: fn, file: file})
	}
	flush()
	return byCat, total, sc.Err()
}

func main() {
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: go run ./bench/cpucat PROFILE[=QUERIES] ...")
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	type column struct {
		name    string
		queries float64
		byCat   []time.Duration
		total   time.Duration
	}
	var cols []column
	for _, arg := range flag.Args() {
		file, q, _ := strings.Cut(arg, "=")
		c := column{name: file, queries: 1}
		if q != "" {
			n, err := strconv.ParseFloat(q, 64)
			if err != nil || n <= 0 {
				fmt.Fprintf(os.Stderr, "cpucat: %s: queries %q\n", file, q)
				os.Exit(2)
			}
			c.queries = n
		}
		out, err := exec.Command("go", "tool", "pprof", "-traces", "-lines", file).Output()
		if err != nil {
			fmt.Fprintf(os.Stderr, "cpucat: go tool pprof %s: %v\n", file, err)
			os.Exit(1)
		}
		if c.byCat, c.total, err = readTraces(bytes.NewReader(out)); err != nil {
			fmt.Fprintf(os.Stderr, "cpucat: %s: %v\n", file, err)
			os.Exit(1)
		}
		cols = append(cols, c)
	}
	ms := func(d time.Duration, q float64) string {
		return fmt.Sprintf("%.3f", float64(d)/float64(time.Millisecond)/q)
	}
	fmt.Print("| category |")
	for _, c := range cols {
		fmt.Printf(" %s |", c.name)
	}
	fmt.Print("\n|---|")
	for range cols {
		fmt.Print("---:|")
	}
	fmt.Println()
	for i, name := range categories {
		fmt.Printf("| %s |", name)
		for _, c := range cols {
			fmt.Printf(" %s |", ms(c.byCat[i], c.queries))
		}
		fmt.Println()
	}
	fmt.Print("| **total** |")
	for _, c := range cols {
		fmt.Printf(" **%s** |", ms(c.total, c.queries))
	}
	fmt.Println()
}
