package main

import (
	"strings"
	"testing"
	"time"
)

// TestClassify: a sample goes to the runtime's work first, then to the
// innermost frame whose package or file has an owner.
func TestClassify(t *testing.T) {
	f := func(fn, file string) frame { return frame{fn: fn, file: file} }
	handler := f("net/http.(*conn).serve", "/go/src/net/http/server.go:2100")
	restCall := []frame{f("net/http.(*Client).Do", "/go/src/net/http/client.go:1"), f("paygraph/restclient.(*Client).do", "/w/restclient/client.go:1")}
	for _, tc := range []struct {
		name  string
		stack []frame
		want  int
	}{
		{"a write on the server's connection", []frame{f("internal/runtime/syscall/linux.Syscall6", "x"), f("syscall.write", "x"), f("net.(*conn).Write", "x"), f("net/http.(*response).finishRequest", "x"), handler}, catSyscall},
		{"malloc under encoding/json", []frame{f("runtime.nextFreeFast", "x"), f("runtime.mallocgc", "x"), f("encoding/json.(*decodeState).object", "x"), handler}, catMalloc},
		{"a GC assist inside malloc", []frame{f("runtime.scanobject", "x"), f("runtime.gcAssistAlloc", "x"), f("runtime.mallocgc", "x"), handler}, catGC},
		{"the scheduler", []frame{f("runtime.futex", "x"), f("runtime.futexwakeup", "x"), f("runtime.wakep", "x"), f("runtime.goready", "x")}, catSched},
		{"encoding/json under the REST client", append([]frame{f("encoding/json.(*decodeState).object", "x")}, restCall...), catJSON},
		{"net/http's client under the REST client", append([]frame{f("net/http.Header.writeSubset", "x"), f("net/http.(*Request).write", "x"), f("net/http.(*persistConn).writeLoop", "x")}, restCall...), catHTTPClient},
		{"the REST transport's pools", append([]frame{f("paygraph/gateway.(*restPools).pool", "/w/gateway/transport.go:1")}, restCall...), catHTTPClient},
		{"net/http's server", []frame{f("net/textproto.(*Reader).ReadMIMEHeader", "x"), f("net/http.readRequest", "x"), handler}, catHTTPServer},
		{"the REST client itself", append([]frame{f("context.WithDeadline", "x")}, restCall[1:]...), catREST},
		{"the REST client's fast decoder", []frame{f("paygraph/restclient.decodePayment", "/w/restclient/wirefast.go:10"), restCall[1]}, catOwnJSON},
		{"the access line", []frame{f("strconv.AppendInt", "x"), f("paygraph/observe.(*accessLine).write", "/w/observe/accessline.go:5"), f("paygraph/gqlhttp.(*logMW).ServeHTTP", "/w/gqlhttp/x.go:1"), handler}, catAccessLog},
		{"a metric", []frame{f("github.com/prometheus/client_golang/prometheus.(*histogram).Observe", "x"), f("paygraph/observe.(*Metrics).Done", "/w/observe/metrics.go:1"), handler}, catMetrics},
		{"gqlgen", []frame{f("github.com/99designs/gqlgen/graphql/executor.(*Executor).CreateOperationContext", "x"), f("paygraph/gqlhttp.serve", "/w/gqlhttp/post.go:1"), handler}, catGqlgen},
		{"graph", []frame{f("paygraph/graph.(*queryLimits).MutateOperationContext", "/w/graph/limits.go:1"), f("github.com/99designs/gqlgen/graphql/executor.x", "x")}, catGraph},
		{"the edge", []frame{f("github.com/go-chi/chi/v5.(*Mux).ServeHTTP", "x"), handler}, catEdge},
		{"the proxy", []frame{f("main.(*proxy).ServeHTTP", "/w/bench/proxy.go:1"), handler}, catProxy},
		{"nothing owned", []frame{f("runtime.memmove", "x"), f("runtime.goexit", "x")}, catOther},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := classify(tc.stack); got != tc.want {
				t.Errorf("classify = %q, want %q", categories[got], categories[tc.want])
			}
		})
	}
}

// TestReadTraces reads pprof's -traces -lines output: labels skipped,
// each sample's value on its leaf line.
func TestReadTraces(t *testing.T) {
	out := `File: bench
Type: cpu
Duration: 5s, Total samples = 30ms ( 0.6%)
-----------+-------------------------------------------------------
      20ms   syscall.write /go/src/syscall/zsyscall_linux_amd64.go:964
             net.(*conn).Write /go/src/net/net.go:200
-----------+-------------------------------------------------------
      key:  value
      10ms   encoding/json.(*encodeState).marshal /go/src/encoding/json/encode.go:300 (inline)
             main.(*proxy).ServeHTTP /w/bench/proxy.go:170
-----------+-------------------------------------------------------
`
	byCat, total, err := readTraces(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if total != 30*time.Millisecond || byCat[catSyscall] != 20*time.Millisecond || byCat[catJSON] != 10*time.Millisecond {
		t.Errorf("total %s, syscalls %s, JSON %s; want 30ms, 20ms, 10ms", total, byCat[catSyscall], byCat[catJSON])
	}
}
