package gqlhttp

import (
	"net/http"

	"github.com/klauspost/compress/gzhttp"
)

// Compress is the middleware that compresses answers of at least minBytes
// (the gateway: 1 KiB; 0: none) with gzip or zstd, as the caller's
// Accept-Encoding allows, adding Vary: Accept-Encoding. gzip on a tie;
// zstd only when the caller prefers it by q-value (zstd;q=1, gzip;q=0.5).
// zstd costs a little less CPU for the same size, but a client that
// offers it cannot always decode it: Node 20's fetch (undici) sends
// "gzip, deflate, br, zstd" and fails on a zstd body (no
// createZstdDecompress before Node 22.15), which broke GraphQL Code
// Generator pointed at the gateway's URL. Every client decodes gzip. A 100-item list is 25 to
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
	wrap, err := gzhttpWrapper(minBytes)
	if err != nil {
		return nil, err
	}
	return func(next http.Handler) http.Handler {
		compressed := wrap(next)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if FirstHeader(r.Header, "Upgrade") != "" || wantsEventStream(FirstHeader(r.Header, "Accept")) {
				next.ServeHTTP(w, r)
				return
			}
			if !mayCompress(r) {
				// What gzhttp does when it selects no encoding, without
				// its wrapper: Vary: Accept-Encoding (a shared line), and
				// the writer as it is (gzhttp's NoGzipResponseWriter only
				// strips its opt-out header, gzhttp.HeaderNoCompression,
				// which nothing here sets). TestCompressSkipSameAsGzhttp.
				addVaryAcceptEncoding(w.Header())
				next.ServeHTTP(w, r)
				return
			}
			compressed.ServeHTTP(w, r)
		})
	}, nil
}

// gzhttpWrapper is gzhttp's middleware as Compress configures it.
func gzhttpWrapper(minBytes int) (func(http.Handler) http.HandlerFunc, error) {
	return gzhttp.NewWrapper(gzhttp.MinSize(minBytes), gzhttp.CompressionLevel(gzhttpLevel), gzhttp.PreferZstd(false),
		gzhttp.ExceptContentTypes([]string{"text/event-stream"}))
}

// mayCompress reports whether gzhttp could select an encoding for r: not
// for HEAD, nor without Accept-Encoding (gzhttp's selectEncoding; most
// server-to-server clients send none). Any Accept-Encoding goes to gzhttp,
// which parses it.
func mayCompress(r *http.Request) bool {
	return r.Method != http.MethodHead && FirstHeader(r.Header, "Accept-Encoding") != ""
}

// addVaryAcceptEncoding adds the line Vary: Accept-Encoding as gzhttp does
// (Header.Add), without allocating when it is the first Vary line.
func addVaryAcceptEncoding(h http.Header) {
	if v, ok := h["Vary"]; ok {
		h["Vary"] = append(v[:len(v):len(v)], varyAcceptEncoding[0])
		return
	}
	h["Vary"] = varyAcceptEncoding
}

// gzhttpLevel is gzip's level 5: gzhttp's default, within a few percent of
// level 9's size on JSON at a fraction of its CPU.
const gzhttpLevel = 5
