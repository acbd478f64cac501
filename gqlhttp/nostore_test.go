package gqlhttp_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"paygraph/gqlhttp"
)

// TestNoStore: every answer, a refusal written below it included, says
// no-store and varies on Origin and the credential headers; a middleware
// below that adds to Vary (as rs/cors does) does not change what the next
// request gets.
func TestNoStore(t *testing.T) {
	h := gqlhttp.NoStore(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("Vary", "Access-Control-Request-Method")
		http.Error(w, "refused", http.StatusForbidden)
	}))
	for i := range 2 {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/graphql?query=%7B__typename%7D", nil))
		if got := rec.Header().Get("Cache-Control"); got != "no-store" {
			t.Errorf("request %d: Cache-Control %q", i, got)
		}
		want := []string{"Origin, X-Api-Key, X-Api-Secret, Authorization", "Access-Control-Request-Method"}
		if got := rec.Header().Values("Vary"); !slices.Equal(got, want) {
			t.Errorf("request %d: Vary %q, want %q", i, got, want)
		}
	}
}

// TestVaryWithoutOrigin: NoStore's line less Origin, shared; other lines
// lose Origin, whatever its case, and an emptied line goes.
func TestVaryWithoutOrigin(t *testing.T) {
	rec := httptest.NewRecorder()
	gqlhttp.NoStore(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/graphql", nil))
	for _, tc := range []struct {
		name string
		in   []string
		want []string
	}{
		{"NoStore's line", rec.Header().Values("Vary"), []string{"X-Api-Key, X-Api-Secret, Authorization"}},
		{"two lines", []string{"origin, Accept-Encoding", "Origin"}, []string{"Accept-Encoding"}},
		{"no Origin", []string{"Accept-Encoding"}, []string{"Accept-Encoding"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := gqlhttp.VaryWithoutOrigin(tc.in); !slices.Equal(got, tc.want) {
				t.Errorf("VaryWithoutOrigin(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
