package graphiql

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
)

var demoHeaders = map[string]string{"x-api-key": "ak_test_demo", "x-api-secret": "sk_test_demo"}

func get(t *testing.T, h http.Handler, method, target string, hdr map[string]string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

func body(t *testing.T, res *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var optionsBlock = regexp.MustCompile(`(?s)<script type="application/json" id="graphiql-options">(.*?)</script>`)

// pageOptions returns the JSON the page hands to init.js, decoded.
func pageOptions(t *testing.T, page string) pageConfig {
	t.Helper()
	m := optionsBlock.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no options block in page:\n%s", page)
	}
	var c pageConfig
	if err := json.Unmarshal([]byte(m[1]), &c); err != nil {
		t.Fatalf("options block is not JSON: %v\n%s", err, m[1])
	}
	return c
}

func TestPage(t *testing.T) {
	tests := []struct {
		name  string
		opts  Options
		path  string
		check func(t *testing.T, page string, c pageConfig)
	}{
		{
			name: "no headers: nothing pre-filled",
			opts: Options{Endpoint: "/graphql"},
			path: "/",
			check: func(t *testing.T, page string, c pageConfig) {
				for _, s := range []string{"x-api-key", "x-api-secret", `"headers"`} {
					if strings.Contains(page, s) {
						t.Errorf("page mentions %q with no Headers", s)
					}
				}
				if c.Headers != "" || c.DefaultQuery != "" {
					t.Errorf("pre-filled: %+v", c)
				}
				if c.Endpoint != "/graphql" {
					t.Errorf("endpoint %q", c.Endpoint)
				}
				if !strings.Contains(page, "<title>GraphiQL</title>") {
					t.Error("default title missing")
				}
			},
		},
		{
			name: "empty headers map: nothing pre-filled",
			opts: Options{Endpoint: "/graphql", Headers: map[string]string{}},
			path: "/index.html",
			check: func(t *testing.T, page string, c pageConfig) {
				if strings.Contains(page, "x-api-key") || c.Headers != "" {
					t.Error("empty Headers pre-filled something")
				}
			},
		},
		{
			name: "sandbox: demo headers and query pre-filled",
			opts: Options{Endpoint: "/graphql", Headers: demoHeaders, DefaultQuery: "{ payments(first: 3) { nodes { id } } }", Title: "paygraph"},
			path: "/",
			check: func(t *testing.T, page string, c pageConfig) {
				var h map[string]string
				if err := json.Unmarshal([]byte(c.Headers), &h); err != nil {
					t.Fatalf("headers are not JSON: %v: %q", err, c.Headers)
				}
				if h["x-api-key"] != "ak_test_demo" || h["x-api-secret"] != "sk_test_demo" || len(h) != 2 {
					t.Errorf("headers %v", h)
				}
				if c.DefaultQuery != "{ payments(first: 3) { nodes { id } } }" {
					t.Errorf("defaultQuery %q", c.DefaultQuery)
				}
				if !strings.Contains(page, "<title>paygraph</title>") {
					t.Error("title missing")
				}
			},
		},
		{
			name: "default endpoint",
			opts: Options{},
			path: "/",
			check: func(t *testing.T, _ string, c pageConfig) {
				if c.Endpoint != "/graphql" {
					t.Errorf("endpoint %q", c.Endpoint)
				}
			},
		},
		{
			name: "hostile values are escaped",
			opts: Options{
				Endpoint:     "/graphql</script><script>alert(1)</script>",
				Headers:      map[string]string{"x-api-key": "</script><script>alert(1)</script>", "<!--": "]]><img src=x onerror=alert(2)>"},
				DefaultQuery: "</script><script>alert(1)</script><!--",
				Title:        "</title><script>alert(3)</script>",
			},
			path: "/",
			check: func(t *testing.T, page string, c pageConfig) {
				if n := strings.Count(page, "<script"); n != 5 { // options block + 4 src
					t.Errorf("%d <script tags, want 5:\n%s", n, page)
				}
				for _, s := range []string{"alert(1)</script>", "<img", "<!--", "</title><script>"} {
					if strings.Contains(page, s) {
						t.Errorf("page contains unescaped %q:\n%s", s, page)
					}
				}
				// And the values still round-trip to init.js unchanged.
				if c.DefaultQuery != "</script><script>alert(1)</script><!--" || c.Endpoint != "/graphql</script><script>alert(1)</script>" {
					t.Errorf("values changed: %+v", c)
				}
				var h map[string]string
				if err := json.Unmarshal([]byte(c.Headers), &h); err != nil || h["x-api-key"] != "</script><script>alert(1)</script>" {
					t.Errorf("headers %q: %v", c.Headers, err)
				}
			},
		},
	}
	externalURL := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+`)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := get(t, Handler(tt.opts), http.MethodGet, tt.path, nil)
			page := body(t, res)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status %d", res.StatusCode)
			}
			if ct := res.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
				t.Errorf("Content-Type %q", ct)
			}
			for k, want := range map[string]string{
				"Content-Security-Policy": CSP,
				"X-Content-Type-Options":  "nosniff",
				"X-Frame-Options":         "DENY",
				"Cache-Control":           "no-cache",
			} {
				if got := res.Header.Get(k); got != want {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
			if m := externalURL.FindAllString(page, -1); len(m) > 0 {
				t.Errorf("page references other hosts: %q", m)
			}
			for _, m := range regexp.MustCompile(`(?:src|href)="([^"]*)"`).FindAllStringSubmatch(page, -1) {
				if u := m[1]; u != "data:," && !strings.HasPrefix(u, "graphiql/") {
					t.Errorf("asset reference %q is not a relative /graphiql/ path", u)
				}
			}
			tt.check(t, page, pageOptions(t, page))
		})
	}
}

func TestCSPHasNoWildcards(t *testing.T) {
	for _, bad := range []string{"*", "http:", "https:", "'unsafe-eval'", "script-src 'self' 'unsafe-inline'"} {
		if strings.Contains(CSP, bad) {
			t.Errorf("CSP allows %q: %s", bad, CSP)
		}
	}
}

func TestAssets(t *testing.T) {
	h := Handler(Options{Endpoint: "/graphql"})
	page := body(t, get(t, h, http.MethodGet, "/", nil))
	refs := regexp.MustCompile(`(?:src|href)="(graphiql/[^"]+)"`).FindAllStringSubmatch(page, -1)
	if len(refs) != 6 {
		t.Fatalf("page references %d assets, want 6", len(refs))
	}
	for _, ref := range refs {
		url := "/" + ref[1]
		t.Run(url, func(t *testing.T) {
			name, version, _ := strings.Cut(strings.TrimPrefix(url, AssetPrefix), "?v=")
			disk, err := os.ReadFile("assets/" + name)
			if err != nil {
				disk, err = os.ReadFile(name)
			}
			if err != nil {
				t.Fatal(err)
			}
			wantCT := map[bool]string{true: "text/javascript; charset=utf-8", false: "text/css; charset=utf-8"}[strings.HasSuffix(name, ".js")]

			// Versioned URL: immutable; identity encoding.
			res := get(t, h, http.MethodGet, url, nil)
			b := body(t, res)
			if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != wantCT {
				t.Fatalf("status %d, Content-Type %q", res.StatusCode, res.Header.Get("Content-Type"))
			}
			if b != string(disk) {
				t.Error("body differs from the embedded file")
			}
			if got := res.Header.Get("Cache-Control"); got != "public, max-age=31536000, immutable" {
				t.Errorf("Cache-Control %q", got)
			}
			if res.Header.Get("X-Content-Type-Options") != "nosniff" || res.Header.Get("Content-Encoding") != "" {
				t.Errorf("headers %v", res.Header)
			}
			etag := res.Header.Get("ETag")
			if etag != `"`+version+`"` {
				t.Errorf("ETag %q, version %q", etag, version)
			}

			// Unversioned (or stale version) URL: revalidated by ETag.
			for _, u := range []string{AssetPrefix + name, AssetPrefix + name + "?v=old"} {
				res = get(t, h, http.MethodGet, u, nil)
				_ = body(t, res)
				if res.StatusCode != http.StatusOK || res.Header.Get("Cache-Control") != "public, no-cache" {
					t.Errorf("%s: status %d, Cache-Control %q", u, res.StatusCode, res.Header.Get("Cache-Control"))
				}
			}
			res = get(t, h, http.MethodGet, AssetPrefix+name, map[string]string{"If-None-Match": etag})
			if res.StatusCode != http.StatusNotModified {
				t.Errorf("If-None-Match: status %d", res.StatusCode)
			}

			// gzip when accepted.
			res = get(t, h, http.MethodGet, url, map[string]string{"Accept-Encoding": "br, gzip;q=0.8"})
			zb := body(t, res)
			if res.Header.Get("Content-Encoding") != "gzip" || !strings.Contains(res.Header.Get("Vary"), "Accept-Encoding") {
				t.Fatalf("no gzip: %v", res.Header)
			}
			zr, err := gzip.NewReader(strings.NewReader(zb))
			if err != nil {
				t.Fatal(err)
			}
			plain, err := io.ReadAll(zr)
			if err != nil || !bytes.Equal(plain, disk) {
				t.Errorf("gzip body does not decode to the file (err %v)", err)
			}
			if res.Header.Get("ETag") == etag {
				t.Error("gzip and identity share an ETag")
			}
			res = get(t, h, http.MethodGet, url, map[string]string{"Accept-Encoding": "gzip;q=0"})
			if res.Header.Get("Content-Encoding") != "" {
				t.Error("gzip;q=0 got gzip")
			}
		})
	}
}

func TestRouting(t *testing.T) {
	h := Handler(Options{})
	tests := []struct {
		method, path string
		want         int
	}{
		{"GET", "/", 200},
		{"HEAD", "/", 200},
		{"GET", "/index.html", 200},
		{"HEAD", "/graphiql/graphiql.min.js", 200},
		{"GET", "/graphiql/init.js", 200},
		{"GET", "/graphiql/page.css", 200},
		{"POST", "/", 405},
		{"DELETE", "/graphiql/graphiql.min.js", 405},
		{"GET", "/graphiql/", 404},
		{"GET", "/graphiql/VERSIONS.md", 404},
		{"GET", "/graphiql/../graphiql.go", 404},
		{"GET", "/graphiql/assets/graphiql.min.js", 404},
		{"GET", "/graphiql/graphiql.min.js.map", 404},
		{"GET", "/favicon.ico", 404},
		{"GET", "/graphql", 404},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			res := get(t, h, tt.method, tt.path, nil)
			if res.StatusCode != tt.want {
				t.Errorf("status %d, want %d", res.StatusCode, tt.want)
			}
			if tt.want == 405 && res.Header.Get("Allow") != "GET, HEAD" {
				t.Errorf("Allow %q", res.Header.Get("Allow"))
			}
		})
	}
}

// TestAssetsLoadNothingExternal guards the offline promise in the files
// themselves: the CSS inlines its fonts, and nothing in the bundles names a
// stylesheet, font or script on another host to load (the many URLs in
// comments and error messages are never fetched; the browser test checks
// the requests the page really makes).
func TestAssetsLoadNothingExternal(t *testing.T) {
	css, err := os.ReadFile("assets/graphiql.min.css")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`url\(\s*['"]?([^'")]*)`).FindAllSubmatch(css, -1) {
		if !bytes.HasPrefix(m[1], []byte("data:")) && !bytes.HasPrefix(m[1], []byte("#")) {
			t.Errorf("CSS loads %q", m[1])
		}
	}
	if bytes.Contains(css, []byte("@import")) {
		t.Error("CSS has @import")
	}
	for _, f := range []string{"assets/graphiql.min.js", "assets/react.production.min.js", "assets/react-dom.production.min.js", "init.js"} {
		js, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{"fonts.googleapis", "fonts.gstatic", "unpkg.com", "cdn.jsdelivr", "cdnjs.", "sourceMappingURL"} {
			if bytes.Contains(js, []byte(bad)) {
				t.Errorf("%s mentions %s", f, bad)
			}
		}
	}
}

func TestAcceptsGzip(t *testing.T) {
	for v, want := range map[string]bool{
		"":                  false,
		"gzip":              true,
		"GZIP":              true,
		"deflate, gzip":     true,
		"gzip;q=0":          false,
		"gzip; q=0.000":     false,
		"gzip;q=0.5":        true,
		"br":                false,
		"x-gzip":            false,
		"identity, br;q=1 ": false,
	} {
		r := httptest.NewRequest("GET", "/", nil)
		if v != "" {
			r.Header.Set("Accept-Encoding", v)
		}
		if got := acceptsGzip(r); got != want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", v, got, want)
		}
	}
}
