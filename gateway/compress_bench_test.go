package gateway_test

import (
	"net/http"
	"testing"
)

// BenchmarkList100Compression: the 100-item list of BenchmarkList100 (1
// REST call, stubbed) with no Accept-Encoding, gzip and zstd: the gateway's
// CPU per query (ns/op) and the bytes sent (bytes/resp), for docs/perf-log/2026-11-benchmarks.md.
func BenchmarkList100Compression(b *testing.B) {
	f := newBenchFixture(b)
	h := benchStubGateway(b, f.stub)
	for _, enc := range []string{"", "gzip", "zstd"} {
		name := enc
		if name == "" {
			name = "identity"
		}
		b.Run(name, func(b *testing.B) {
			br := f.request(benchList100, nil)
			br.header = br.header.Clone()
			if enc != "" {
				br.header.Set("Accept-Encoding", enc)
			}
			rec := br.serve(h)
			if rec.Code != http.StatusOK || rec.Header().Get("Content-Encoding") != enc {
				b.Fatalf("status %d, Content-Encoding %q", rec.Code, rec.Header().Get("Content-Encoding"))
			}
			size := rec.Body.Len()
			b.ReportAllocs()
			for b.Loop() {
				br.serve(h)
			}
			b.ReportMetric(float64(size), "bytes/resp")
		})
	}
}
