package gateway

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/rs/cors"

	"paygraph/gqlhttp"
)

// TestCORSWithoutOriginSameAsRSCors: a request without an Origin header
// (not a preflight) is answered by corsFor without rs/cors, and the
// answer is what rs/cors and the origin guard gave it: the same status,
// headers and body, whatever Vary lines the layers above set (NoStore's,
// after Compress's or not), but for its Vary lines given as one (the same
// names in the same order). Differential, against rs/cors with corsFor's
// options.
func TestCORSWithoutOriginSameAsRSCors(t *testing.T) {
	t.Parallel()
	const shop = "https://shop.example.com"
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"data":{}}`)
	})
	for _, origins := range [][]string{nil, {shop}, {"*"}} {
		allowed := map[string]bool{}
		for _, o := range origins {
			allowed[o] = true
		}
		// corsFor as it was: Origin out of the lines above, then rs/cors.
		rs := cors.New(corsOptions(func(o string) bool { return allowed["*"] || allowed[o] })).Handler(next)
		reference := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if v := w.Header()["Vary"]; len(v) > 0 {
				w.Header()["Vary"] = gqlhttp.VaryWithoutOrigin(v)
			}
			rs.ServeHTTP(w, r)
		})
		ours := corsFor(origins)(next)
		for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodHead, http.MethodOptions} {
			for _, above := range [][]string{nil, {"Accept-Encoding"}, {"X-Other"}} {
				name := strings.Join(origins, ",") + " " + method + " " + strings.Join(above, ",")
				t.Run(name, func(t *testing.T) {
					serve := func(h http.Handler) *httptest.ResponseRecorder {
						rec := httptest.NewRecorder()
						for _, line := range above {
							rec.Header().Add("Vary", line)
						}
						gqlhttp.NoStore(h).ServeHTTP(rec, httptest.NewRequest(method, "/graphql", nil))
						return rec
					}
					want, got := serve(reference), serve(ours)
					if got.Code != want.Code || got.Body.String() != want.Body.String() {
						t.Errorf("status %d body %q; rs/cors's %d %q", got.Code, got.Body, want.Code, want.Body)
					}
					g, w := got.Result().Header, want.Result().Header
					if method != http.MethodOptions { // OPTIONS without a preflight is answered below, as GET
						if len(g["Vary"]) != 1 {
							t.Errorf("Vary lines %q, want one", g["Vary"])
						}
					}
					if v := w["Vary"]; len(v) > 1 {
						w["Vary"] = []string{strings.Join(v, ", ")}
					}
					same := len(g) == len(w)
					for k := range w {
						same = same && slices.Equal(g[k], w[k])
					}
					if !same {
						t.Errorf("headers %q; rs/cors's %q", g, w)
					}
				})
			}
		}
	}
}
