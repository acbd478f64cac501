package gqlhttp

import (
	"net/http"

	"github.com/klauspost/compress/gzhttp"
)

// Compress is the middleware that compresses answers of at least minBytes
// (COMPRESS_MIN_BYTES; 0: none) with zstd or gzip, as the caller's
// Accept-Encoding allows (zstd preferred on a tie: it costs less CPU for
// the same size), adding Vary: Accept-Encoding. A 100-item list is 25 to
// 47 KB of JSON that compresses to about a fifth (docs/perf-log/2026-11-benchmarks.md); mobile
// apps on slow links gain the most. Smaller answers (single records,
// errors) go as they are: compressing them costs more than it saves.
//
// klauspost/compress's gzhttp rather than our own wrapper: it buffers up
// to minBytes before deciding, keeps Flush and Hijack working, pools its
// encoders and is well kept (and already in the module graph). Streams
// (protocol upgrades, text/event-stream) pass through untouched, so that
// their events are never held back in a compressor's buffer; a
// multipart/mixed stream of @defer results is compressed, each part
// flushed through the encoder (incremental.go).
func Compress(minBytes int) (func(http.Handler) http.Handler, error) {
	if minBytes <= 0 {
		return func(next http.Handler) http.Handler { return next }, nil
	}
	wrap, err := gzhttp.NewWrapper(gzhttp.MinSize(minBytes), gzhttp.CompressionLevel(gzhttpLevel),
		gzhttp.ExceptContentTypes([]string{"text/event-stream"}))
	if err != nil {
		return nil, err
	}
	return func(next http.Handler) http.Handler {
		compressed := wrap(next)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Upgrade") != "" || wantsEventStream(r.Header.Get("Accept")) {
				next.ServeHTTP(w, r)
				return
			}
			compressed.ServeHTTP(w, r)
		})
	}, nil
}

// gzhttpLevel is gzip's level 5: gzhttp's default, within a few percent of
// level 9's size on JSON at a fraction of its CPU.
const gzhttpLevel = 5
