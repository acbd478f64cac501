package gateway

import (
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/rs/cors"

	"paygraph/gqlhttp"
	"paygraph/restclient"
)

// corsFor lets only the merchant's own frontends call /graphql from a
// browser: a page on another site cannot spend a victim's credentials.
func corsFor(origins []string) func(http.Handler) http.Handler {
	allowed := make(map[string]bool, len(origins))
	for _, o := range origins {
		allowed[o] = true
	}
	allow := func(origin string) bool { return allowed["*"] || allowed[origin] }
	c := cors.New(corsOptions(allow))
	return func(next http.Handler) http.Handler {
		// A foreign origin that skips the preflight is refused outright.
		guard := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if v := w.Header()["Vary"]; len(v) > 1 {
				w.Header()["Vary"] = gqlhttp.VaryOneLine(v)
			}
			if o := gqlhttp.FirstHeader(r.Header, "Origin"); o != "" && !allow(o) && !sameOrigin(o, r) {
				http.Error(w, "origin not allowed", http.StatusForbidden)
				return
			}
			next.ServeHTTP(w, r)
		})
		h := c.Handler(guard)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if gqlhttp.FirstHeader(r.Header, "Origin") == "" && !isPreflight(r) {
				// rs/cors would only add Vary: Origin here.
				w.Header()["Vary"] = gqlhttp.VaryOriginLast(w.Header()["Vary"])
				next.ServeHTTP(w, r)
				return
			}
			// rs/cors adds a Vary line with Origin: named once.
			if v := w.Header()["Vary"]; len(v) > 0 {
				w.Header()["Vary"] = gqlhttp.VaryWithoutOrigin(v)
			}
			if isPreflight(r) {
				normalizeRequestHeaders(r.Header)
			}
			h.ServeHTTP(w, r)
		})
	}
}

// isPreflight is rs/cors's test for a preflight request (its Handler).
func isPreflight(r *http.Request) bool {
	return r.Method == http.MethodOptions && gqlhttp.FirstHeader(r.Header, "Access-Control-Request-Method") != ""
}

// normalizeRequestHeaders makes Access-Control-Request-Headers as rs/cors
// expects: one sorted lower-case line.
func normalizeRequestHeaders(h http.Header) {
	lines := h.Values("Access-Control-Request-Headers")
	if len(lines) == 0 {
		return
	}
	var names []string
	for _, line := range lines {
		for _, n := range strings.Split(line, ",") {
			if n = strings.ToLower(strings.Trim(n, " \t")); n != "" {
				names = append(names, n)
			}
		}
	}
	slices.Sort(names)
	h.Set("Access-Control-Request-Headers", strings.Join(slices.Compact(names), ","))
}

// corsOptions are the rs/cors options of corsFor, allow deciding origins.
func corsOptions(allow func(origin string) bool) cors.Options {
	return cors.Options{
		// rs/cors reads an empty AllowedOrigins as "*": decide ourselves.
		AllowOriginFunc: allow,
		AllowedMethods:  []string{http.MethodGet, http.MethodPost},
		AllowedHeaders: []string{"Content-Type", "Accept", "Authorization", restclient.HeaderAPIKey, restclient.HeaderAPISecret,
			"X-Request-Id", "traceparent", "tracestate", "baggage", "apollo-require-preflight",
			// Apollo Client's client awareness (its clientAwareness option).
			"apollographql-client-name", "apollographql-client-version"},
		ExposedHeaders: []string{"X-Request-Id"},
		MaxAge:         600,
	}
}

func sameOrigin(origin string, r *http.Request) bool {
	u, err := url.Parse(origin)
	return err == nil && u.Host == r.Host
}
