package observe

// BenchmarkAccessLog: the access log middleware's cost per request, the
// line written as the gateway writes it (NewLogger, JSON, info, to a
// writer that keeps nothing) around a handler that does what a payment's
// layers tell the stats. Issue 25's figures: docs/performance.md.
//
//	go test -run '^$' -bench AccessLog -benchmem -count 5 ./observe

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
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
		name  string
		level slog.Level
		id    string // the caller's X-Request-Id
	}{
		{"json new id", slog.LevelInfo, ""},
		{"json caller id", slog.LevelInfo, "req-123_abc.DEF"},
		{"off", slog.LevelWarn, ""}, // the middleware without its line
	} {
		b.Run(bc.name, func(b *testing.B) {
			h := AccessLog(NewLogger(io.Discard, "json", bc.level, o), o)(inner)
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
