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
