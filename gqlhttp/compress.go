package gqlhttp

import (
	"net/http"

	"github.com/klauspost/compress/gzhttp"
)

// Compress is gzhttp's middleware compressing answers of at least minBytes (0:
// none) with gzip, or zstd only when the caller prefers it by q-value (some
// that offer it cannot decode it); streams pass.
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
			if !mayCompress(r) { // as gzhttp, without its wrapper (TestCompressSkipSameAsGzhttp)
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

// mayCompress reports whether gzhttp could select an encoding for r.
func mayCompress(r *http.Request) bool {
	return r.Method != http.MethodHead && FirstHeader(r.Header, "Accept-Encoding") != ""
}

// addVaryAcceptEncoding adds the line Vary: Accept-Encoding as gzhttp does.
func addVaryAcceptEncoding(h http.Header) {
	if v, ok := h["Vary"]; ok {
		h["Vary"] = append(v[:len(v):len(v)], varyAcceptEncoding[0])
		return
	}
	h["Vary"] = varyAcceptEncoding
}

// gzhttpLevel is gzhttp's default: near level 9's size at a fraction of its CPU.
const gzhttpLevel = 5
