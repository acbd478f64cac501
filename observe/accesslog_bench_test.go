package observe

// BenchmarkAccessLog: the access log middleware's cost per request, the
// line written as the gateway writes it (NewLogger, JSON, info, to a
// writer that keeps nothing) around a handler that does what a payment's
// layers tell the stats; "via slog" is the line written through slog's
// JSON handler rather than by hand (accessline.go).
//
//	go test -run '^$' -bench AccessLog -benchmem -count 5 ./observe

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"paygraph/internal/testenv"
)

func BenchmarkAccessLog(b *testing.B) {
	secrets := []string{testKey, testSecret}
	o := wired(func(context.Context) []string { return secrets })
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st := StatsFrom(r.Context())
		st.AddRESTCall()
		st.AddRESTSuccess()
		st.SetOperation("GetPayment", OutcomeOK)
		_, _ = w.Write([]byte(`{"data":{"payment":{"id":"pay_prod_abc"}}}`))
	})
	for _, bc := range []struct {
		name    string
		level   slog.Level
		id      string // the caller's X-Request-Id
		viaSlog bool   // the line through slog, not written by hand
	}{
		{"json new id", slog.LevelInfo, "", false},
		{"json caller id", slog.LevelInfo, "req-123_abc.DEF", false},
		{"json new id via slog", slog.LevelInfo, "", true},
		{"off", slog.LevelWarn, "", false}, // the middleware without its line
	} {
		b.Run(bc.name, func(b *testing.B) {
			logger := NewLogger(io.Discard, "json", bc.level, o)
			if bc.viaSlog {
				logger = slog.New(RedactingHandler(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: bc.level}), o))
			}
			h := AccessLog(logger, o)(inner)
			req := httptest.NewRequest(http.MethodPost, "/graphql", nil)
			req.Header.Set("X-Api-Key", testKey)
			if bc.id != "" {
				req.Header.Set("X-Request-Id", bc.id)
			}
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				h.ServeHTTP(w, req)
			}
		})
	}
}

// discardWriter is a ResponseWriter that keeps nothing but its header map.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(int)             {}

var _ io.Writer = (*discardWriter)(nil)

// BenchmarkAccessLogToPipe: the same middleware and line, from 16
// goroutines at once, written to a pipe whose other end a goroutine
// drains (the process's stderr and the log collector), one write(2) a
// line. Its time per request is CPU on every core the benchmark keeps
// busy, the reader's included.
//
//	go test -run '^$' -bench AccessLogToPipe -benchmem -count 5 ./observe
func BenchmarkAccessLogToPipe(b *testing.B) {
	o := wired(func(context.Context) []string { return nil })
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st := StatsFrom(r.Context())
		st.AddRESTCall()
		st.SetOperation("GetPayment", OutcomeOK)
		_, _ = w.Write([]byte(`{"data":{"payment":{"id":"pay_prod_abc"}}}`))
	})
	r, w, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	drained := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, r); close(drained) }()
	h := AccessLog(NewLogger(w, "json", slog.LevelInfo, o), o)(inner)
	b.SetParallelism(8) // 16 goroutines on 2 cores
	b.ReportAllocs()
	cpu0 := testenv.ProcessCPU()
	b.RunParallel(func(pb *testing.PB) {
		req := httptest.NewRequest(http.MethodPost, "/graphql", nil)
		dw := &discardWriter{h: http.Header{}}
		for pb.Next() {
			clear(dw.h)
			h.ServeHTTP(dw, req)
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(testenv.ProcessCPU()-cpu0)/float64(b.N), "cpu-ns/op")
	_ = w.Close()
	<-drained
	_ = r.Close()
}
