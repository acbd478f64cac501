package gqlhttp_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"paygraph/gqlhttp"
)

// TestNoStore: every answer, a refusal written below it included, says
// no-store and varies on Origin and the credential headers; a middleware
// below that adds to Vary (as rs/cors does) does not change what the next
// request gets.
func TestNoStore(t *testing.T) {
	t.Parallel()
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

// TestNoStoreKeepsVaryAbove: the Vary lines set above NoStore stay, before
// its own: Compress's Accept-Encoding (gzhttp's Header.Add or its own
// shared line) was overwritten, so a compressed answer did not vary on
// Accept-Encoding.
func TestNoStoreKeepsVaryAbove(t *testing.T) {
	t.Parallel()
	callers := "Origin, X-Api-Key, X-Api-Secret, Authorization"
	for _, tc := range []struct {
		name  string
		above []string
		want  []string
	}{
		{"none", nil, []string{callers}},
		{"Accept-Encoding", []string{"Accept-Encoding"}, []string{"Accept-Encoding", callers}},
		{"two lines", []string{"Accept-Encoding", "X-Other"}, []string{"Accept-Encoding", "X-Other", callers}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			for _, line := range tc.above {
				rec.Header().Add("Vary", line)
			}
			gqlhttp.NoStore(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/graphql", nil))
			if got := rec.Header().Values("Vary"); !slices.Equal(got, tc.want) {
				t.Errorf("Vary %q, want %q", got, tc.want)
			}
		})
	}
}

// TestVaryWithoutOrigin: NoStore's lines less Origin, shared; other lines
// lose Origin, whatever its case, and an emptied line goes. VaryOriginLast
// is the same with Origin last, all in one line.
func TestVaryWithoutOrigin(t *testing.T) {
	t.Parallel()
	noStore := func(above ...string) []string {
		rec := httptest.NewRecorder()
		for _, line := range above {
			rec.Header().Add("Vary", line)
		}
		gqlhttp.NoStore(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/graphql", nil))
		return rec.Header().Values("Vary")
	}
	for _, tc := range []struct {
		name string
		in   []string
		want []string
	}{
		{"NoStore's line", noStore(), []string{"X-Api-Key, X-Api-Secret, Authorization"}},
		{"NoStore's line after Accept-Encoding", noStore("Accept-Encoding"), []string{"Accept-Encoding", "X-Api-Key, X-Api-Secret, Authorization"}},
		{"NoStore's line after another", noStore("X-Other"), []string{"X-Other", "X-Api-Key, X-Api-Secret, Authorization"}},
		{"two lines", []string{"origin, Accept-Encoding", "Origin"}, []string{"Accept-Encoding"}},
		{"no Origin", []string{"Accept-Encoding"}, []string{"Accept-Encoding"}},
		{"none", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := gqlhttp.VaryWithoutOrigin(tc.in); !slices.Equal(got, tc.want) {
				t.Errorf("VaryWithoutOrigin(%q) = %q, want %q", tc.in, got, tc.want)
			}
			want := []string{strings.Join(append(slices.Clip(tc.want), "Origin"), ", ")}
			if got := gqlhttp.VaryOriginLast(tc.in); !slices.Equal(got, want) {
				t.Errorf("VaryOriginLast(%q) = %q, want %q", tc.in, got, want)
			}
		})
	}
}

// TestVaryOneLine: the Vary lines as one, the names in their order; one
// line or none as they are.
func TestVaryOneLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   []string
		want []string
	}{
		{"none", nil, nil},
		{"one line", []string{"Origin"}, []string{"Origin"}},
		{"NoStore's less Origin, then rs/cors's", []string{"X-Api-Key, X-Api-Secret, Authorization", "Origin"},
			[]string{"X-Api-Key, X-Api-Secret, Authorization, Origin"}},
		{"with Compress's first", []string{"Accept-Encoding", "X-Api-Key, X-Api-Secret, Authorization", "Origin"},
			[]string{"Accept-Encoding, X-Api-Key, X-Api-Secret, Authorization, Origin"}},
		{"others", []string{"X-Other", "X-Api-Key, X-Api-Secret, Authorization", "Origin"},
			[]string{"X-Other, X-Api-Key, X-Api-Secret, Authorization, Origin"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := gqlhttp.VaryOneLine(tc.in); !slices.Equal(got, tc.want) {
				t.Errorf("VaryOneLine(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
