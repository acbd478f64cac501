package gqlhttp

import (
	"net/http"
	"strings"
)

// NoStore is the middleware that keeps /graphql answers out of shared caches,
// which could serve one merchant's payments to another's same GET URL:
// no-store, and a Vary on Origin and the credentials.
func NoStore(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h["Cache-Control"] = cacheControlNoStore
		h["Vary"] = varyThenCallers(h["Vary"])
		next.ServeHTTP(w, r)
	})
}

// varyThenCallers is the Vary lines v with NoStore's after them.
func varyThenCallers(v []string) []string {
	switch {
	case len(v) == 0:
		return varyOnCallers
	case len(v) == 1 && v[0] == varyAcceptEncoding[0]:
		return varyEncodingOnCallers
	}
	return append(v[:len(v):len(v)], varyOnCallers[0])
}

// VaryWithoutOrigin is v without Origin, for rs/cors below NoStore, which adds its own.
func VaryWithoutOrigin(v []string) []string {
	switch {
	case len(v) == 1 && v[0] == varyOnCallers[0]:
		return varyOnCallersButOrigin
	case len(v) == 2 && v[0] == varyAcceptEncoding[0] && v[1] == varyOnCallers[0]:
		return varyEncodingOnCallersButOrigin
	}
	var out []string
	for _, line := range v {
		var names []string
		for _, n := range strings.Split(line, ",") {
			if n = strings.TrimSpace(n); n != "" && !strings.EqualFold(n, "Origin") {
				names = append(names, n)
			}
		}
		if len(names) > 0 {
			out = append(out, strings.Join(names, ", "))
		}
	}
	return out
}

// VaryOriginLast is VaryWithoutOrigin(v) with Origin last, in one line (the
// same to a cache, RFC 9110 5.3).
func VaryOriginLast(v []string) []string {
	switch {
	case len(v) == 1 && v[0] == varyOnCallers[0]:
		return varyOnCallersOriginLast
	case len(v) == 2 && v[0] == varyAcceptEncoding[0] && v[1] == varyOnCallers[0]:
		return varyEncodingOnCallersOriginLast
	}
	return VaryOneLine(append(VaryWithoutOrigin(v), "Origin"))
}

// VaryOneLine is the Vary lines v as one line, the names in their order.
func VaryOneLine(v []string) []string {
	switch {
	case len(v) <= 1:
		return v
	case len(v) == 2 && v[0] == varyOnCallersButOrigin[0] && v[1] == "Origin":
		return varyOnCallersOriginLast
	case len(v) == 3 && v[0] == varyAcceptEncoding[0] && v[1] == varyOnCallersButOrigin[0] && v[2] == "Origin":
		return varyEncodingOnCallersOriginLast
	}
	return []string{strings.Join(v, ", ")}
}

// The header values NoStore and Compress set, shared (no spare capacity: an append copies).
var (
	cacheControlNoStore             = []string{"no-store"}
	varyAcceptEncoding              = []string{"Accept-Encoding"}
	varyOnCallers                   = []string{"Origin, " + varyOnCallersButOrigin[0]}
	varyOnCallersButOrigin          = []string{canonicalAPIKey + ", " + canonicalAPISecret + ", Authorization"}
	varyEncodingOnCallers           = []string{varyAcceptEncoding[0], varyOnCallers[0]}
	varyEncodingOnCallersButOrigin  = []string{varyAcceptEncoding[0], varyOnCallersButOrigin[0]}
	varyOnCallersOriginLast         = []string{varyOnCallersButOrigin[0] + ", Origin"}
	varyEncodingOnCallersOriginLast = []string{varyAcceptEncoding[0] + ", " + varyOnCallersOriginLast[0]}
)
