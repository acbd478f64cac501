package gateway_test

import (
	"net/http"
	"sort"
	"strings"
	"testing"
)

// TestCORSAllowsCommonClientHeaders: a preflight asking for the headers
// common clients add (Apollo Client's client awareness, OpenTelemetry's
// baggage) is allowed for a configured origin.
func TestCORSAllowsCommonClientHeaders(t *testing.T) {
	t.Parallel()
	const shop = "https://shop.example.com"
	g := startGateway(t, setup{env: map[string]string{"CORS_ALLOWED_ORIGINS": shop}})
	for _, header := range []string{"apollographql-client-name", "apollographql-client-version", "baggage", "traceparent", "x-api-key"} {
		t.Run(header, func(t *testing.T) {
			pre, _ := http.NewRequest(http.MethodOptions, g.URL+"/graphql", nil)
			pre.Header.Set("Origin", shop)
			pre.Header.Set("Access-Control-Request-Method", "POST")
			// Sorted and lower case, as browsers send them (rs/cors expects it).
			asked := []string{"content-type", header}
			sort.Strings(asked)
			pre.Header.Set("Access-Control-Request-Headers", strings.Join(asked, ","))
			resp, err := http.DefaultClient.Do(pre)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got := strings.ToLower(resp.Header.Get("Access-Control-Allow-Headers")); resp.Header.Get("Access-Control-Allow-Origin") != shop || !strings.Contains(got, header) {
				t.Errorf("preflight %d: allow-origin %q, allow-headers %q", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"), got)
			}
		})
	}
}

// TestCORSPreflightHeaderListParsed: the preflight's header list is a
// list as the Fetch standard parses it, in any order, spacing and case,
// on one line or several; each spelling is allowed as browsers' own.
func TestCORSPreflightHeaderListParsed(t *testing.T) {
	t.Parallel()
	const shop = "https://shop.example.com"
	g := startGateway(t, setup{env: map[string]string{"CORS_ALLOWED_ORIGINS": shop}})
	for _, tc := range []struct {
		name  string
		lines []string
	}{
		{"browser form", []string{"authorization,content-type"}},
		{"unsorted", []string{"content-type,authorization"}},
		{"spaced", []string{"content-type, authorization"}},
		{"tabs and empty items", []string{"\tcontent-type ,, authorization\t"}},
		{"mixed case", []string{"Content-Type, Authorization"}},
		{"repeated", []string{"content-type, authorization, content-type"}},
		{"two lines", []string{"content-type", "authorization"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pre, _ := http.NewRequest(http.MethodOptions, g.URL+"/graphql", nil)
			pre.Header.Set("Origin", shop)
			pre.Header.Set("Access-Control-Request-Method", "POST")
			for _, l := range tc.lines {
				pre.Header.Add("Access-Control-Request-Headers", l)
			}
			resp, err := http.DefaultClient.Do(pre)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			got := strings.ToLower(resp.Header.Get("Access-Control-Allow-Headers"))
			if resp.Header.Get("Access-Control-Allow-Origin") != shop || !strings.Contains(got, "authorization") || !strings.Contains(got, "content-type") {
				t.Errorf("preflight %d: allow-origin %q, allow-headers %q", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"), got)
			}
		})
	}
}
