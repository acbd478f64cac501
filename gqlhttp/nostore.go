package gqlhttp

import (
	"net/http"

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
// first on the route, so that refusals (413, 415, 405, 400, the CORS
// guard's 403) carry both too.
//
// rs/cors, under it, adds a Vary line of its own ("Origin", or the
// preflight's list); a name repeated across Vary lines means the same.
func NoStore(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h["Cache-Control"] = cacheControlNoStore
		h["Vary"] = varyOnCallers
		next.ServeHTTP(w, r)
	})
}

// The header values NoStore sets, shared: net/http only reads them, and a
// middleware that adds to them (rs/cors appends to Vary) copies first,
// since each has no spare capacity.
var (
	cacheControlNoStore = []string{"no-store"}
	varyOnCallers       = []string{"Origin, " + http.CanonicalHeaderKey(restclient.HeaderAPIKey) + ", " +
		http.CanonicalHeaderKey(restclient.HeaderAPISecret) + ", Authorization"}
)
