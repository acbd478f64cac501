package gqlhttp

import (
	"net/http"
	"strings"

	"paygraph/restclient"
)

// NoStore is the middleware that keeps /graphql answers out of shared
// caches: a GET query is a URL, and without it a CDN or Varnish in front
// of the gateway could store one merchant's payments and serve them to
// another merchant asking for the same URL. Every answer gets
// "Cache-Control: no-store" (the contract's words) and a Vary on the
// headers an answer depends on: Origin (CORS) and the credential headers
// (Authorization included, for session tokens), so that even a cache that
// ignored no-store could not hand one caller's answer to another. It runs
// first on the route but for Compress, so that refusals (413, 415, 405,
// 400, the CORS guard's 403) carry both too. The Vary lines above it
// (Compress's Accept-Encoding) stay, before its own.
//
// rs/cors, under it, adds a Vary line of its own ("Origin", or the
// preflight's list starting with Origin): the gateway's CORS wrapper takes
// Origin out of NoStore's line first (VaryWithoutOrigin), so that an
// answer names Origin once.
func NoStore(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h["Cache-Control"] = cacheControlNoStore
		h["Vary"] = varyThenCallers(h["Vary"])
		next.ServeHTTP(w, r)
	})
}

// varyThenCallers is the Vary lines v with NoStore's after them; the
// usual ones are shared values.
func varyThenCallers(v []string) []string {
	switch {
	case len(v) == 0:
		return varyOnCallers
	case len(v) == 1 && v[0] == varyAcceptEncoding[0]:
		return varyEncodingOnCallers
	}
	return append(v[:len(v):len(v)], varyOnCallers[0])
}

// VaryWithoutOrigin is the Vary lines v without the name Origin, for a
// middleware below NoStore that adds its own Origin line (rs/cors does).
// NoStore's lines map to shared values, without allocating.
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

// VaryOriginLast is VaryWithoutOrigin(v) with Origin last, in one line:
// the Vary of an answer to a request without an Origin header once rs/cors
// has added its line (the gateway's CORS wrapper answers those without
// it). One line listing every name is the same to an HTTP cache as a line
// per name (RFC 9110 section 5.3), and costs the server and its client
// fewer lines to write and read. NoStore's lines map to shared values,
// without allocating.
func VaryOriginLast(v []string) []string {
	switch {
	case len(v) == 1 && v[0] == varyOnCallers[0]:
		return varyOnCallersOriginLast
	case len(v) == 2 && v[0] == varyAcceptEncoding[0] && v[1] == varyOnCallers[0]:
		return varyEncodingOnCallersOriginLast
	}
	return VaryOneLine(append(VaryWithoutOrigin(v), "Origin"))
}

// VaryOneLine is the Vary lines v as one line (the names in their order),
// for the last middleware that adds one (rs/cors's "Origin", after
// VaryWithoutOrigin took it out of NoStore's). The lines of the usual
// answers to a browser map to shared values, without allocating.
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

// The header values NoStore and Compress set, shared: net/http only reads
// them, and a middleware that adds to them (rs/cors appends to Vary)
// copies first, since each has no spare capacity.
var (
	cacheControlNoStore = []string{"no-store"}
	varyAcceptEncoding  = []string{"Accept-Encoding"}
	varyOnCallers       = []string{"Origin, " + varyOnCallersButOrigin[0]}
	// varyOnCallersButOrigin is varyOnCallers less Origin (VaryWithoutOrigin).
	varyOnCallersButOrigin = []string{http.CanonicalHeaderKey(restclient.HeaderAPIKey) + ", " +
		http.CanonicalHeaderKey(restclient.HeaderAPISecret) + ", Authorization"}
	varyEncodingOnCallers           = []string{varyAcceptEncoding[0], varyOnCallers[0]}
	varyEncodingOnCallersButOrigin  = []string{varyAcceptEncoding[0], varyOnCallersButOrigin[0]}
	varyOnCallersOriginLast         = []string{varyOnCallersButOrigin[0] + ", Origin"}
	varyEncodingOnCallersOriginLast = []string{varyAcceptEncoding[0] + ", " + varyOnCallersOriginLast[0]}
)
