// Package graphiql serves GraphiQL, the in-browser GraphQL IDE, from the
// binary: the page and its embedded JavaScript and CSS (assets/VERSIONS.md,
// refreshed by scripts/update-graphiql.sh) work offline, and its
// Content-Security-Policy forbids loading anything from another origin.
package graphiql

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"html/template"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"
)

// Options configure the page.
type Options struct {
	// Endpoint is the GraphQL endpoint, a path on the page's own origin
	// (its connect-src is 'self'); "" means "/graphql".
	Endpoint     string
	Headers      map[string]string // pre-fill GraphiQL's headers editor; empty: nothing
	DefaultQuery string            // pre-fills the query editor; "": GraphiQL's own
	Title        string            // the page's title; "" means "GraphiQL"
	// TokenReplaces, when set, shows a "session token" box whose token is
	// sent as "Authorization: Bearer <token>" instead of these headers.
	TokenReplaces []string
	RESTCalls     bool // show the "REST calls" panel: the last operation's cost receipt
}

// AssetPrefix is the path under which the page's assets are served.
const AssetPrefix = "/graphiql/"

//go:embed assets/graphiql.min.js assets/graphiql.min.css assets/react.production.min.js assets/react-dom.production.min.js
var vendored embed.FS

//go:embed init.js page.css
var own embed.FS

//go:embed page.html
var pageHTML string

var pageTemplate = template.Must(template.New("page").Parse(pageHTML))

// CSP is the page's Content-Security-Policy: scripts only from the gateway
// (init.js reads the options from a JSON block); GraphiQL inserts <style>
// elements, hence 'unsafe-inline' for styles only.
const CSP = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; font-src 'self' data:; connect-src 'self'; " +
	"object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// asset is one embedded file, served with a strong ETag and, if accepted, gzipped (once).
type asset struct {
	contentType string
	body        []byte
	hash        string        // hex SHA-256 prefix: the ETag and the ?v= version
	gzipped     func() []byte // body compressed, once
}

var loadAssets = sync.OnceValue(func() map[string]*asset {
	assetsByID := map[string]*asset{}
	add := func(fsys embed.FS, file string) {
		body, err := fsys.ReadFile(file)
		if err != nil {
			panic("graphiql: embedded asset missing: " + file)
		}
		sum := sha256.Sum256(body)
		name := path.Base(file)
		ct := "text/css; charset=utf-8" // every asset is JavaScript or CSS
		if path.Ext(name) == ".js" {
			ct = "text/javascript; charset=utf-8"
		}
		assetsByID[name] = &asset{contentType: ct, body: body, hash: hex.EncodeToString(sum[:8]),
			gzipped: sync.OnceValue(func() []byte {
				var buf bytes.Buffer
				zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
				_, _ = zw.Write(body)
				_ = zw.Close()
				return buf.Bytes()
			})}
	}
	entries, _ := vendored.ReadDir("assets")
	for _, e := range entries {
		add(vendored, "assets/"+e.Name())
	}
	add(own, "init.js")
	add(own, "page.css")
	return assetsByID
})

// pageConfig is what init.js reads from the page's JSON block.
type pageConfig struct {
	Endpoint      string   `json:"endpoint"`
	Headers       string   `json:"headers,omitempty"`
	DefaultQuery  string   `json:"defaultQuery,omitempty"`
	TokenReplaces []string `json:"tokenReplaces,omitempty"`
	RESTCalls     bool     `json:"restCalls,omitempty"`
}

type pageData struct {
	Title  string
	Config pageConfig
	Assets map[string]string // file name -> versioned URL
}

// Handler serves the page at "/" and "/index.html" and its assets under AssetPrefix; else 404.
func Handler(opts Options) http.Handler {
	d := pageData{Title: cmp.Or(opts.Title, "GraphiQL"), Assets: map[string]string{}, Config: pageConfig{
		Endpoint: cmp.Or(opts.Endpoint, "/graphql"), DefaultQuery: opts.DefaultQuery, TokenReplaces: opts.TokenReplaces, RESTCalls: opts.RESTCalls}}
	if len(opts.Headers) > 0 {
		// JSON text, left unescaped: the template escapes the whole block.
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(opts.Headers); err != nil {
			panic("graphiql: headers: " + err.Error())
		}
		d.Config.Headers = strings.TrimSuffix(b.String(), "\n")
	}
	// Hashed and rendered on the first request: unused, they are never read.
	var (
		prepared sync.Once
		assets   map[string]*asset
		page     []byte
		etag     string
	)
	prepare := func() {
		assets = loadAssets()
		for name, a := range assets {
			// Relative to the page, so that it works behind a path prefix.
			d.Assets[name] = strings.TrimPrefix(AssetPrefix, "/") + name + "?v=" + a.hash
		}
		// html/template escapes each value: none can close the JSON block.
		var buf bytes.Buffer
		if err := pageTemplate.Execute(&buf, d); err != nil {
			panic("graphiql: page: " + err.Error())
		}
		page = buf.Bytes()
		sum := sha256.Sum256(page)
		etag = `"` + hex.EncodeToString(sum[:8]) + `"`
	}

	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		prepared.Do(prepare)
		var a *asset // nil: the page
		if p := r.URL.Path; p != "/" && p != "/index.html" {
			if name, ok := strings.CutPrefix(p, AssetPrefix); ok {
				a = assets[name]
			}
			if a == nil {
				http.NotFound(w, r)
				return
			}
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		if a == nil {
			h.Set("Content-Type", "text/html; charset=utf-8")
			h.Set("Content-Security-Policy", CSP)
			h.Set("Referrer-Policy", "no-referrer")
			h.Set("X-Frame-Options", "DENY")
			h.Set("Cache-Control", "no-cache")
			h.Set("ETag", etag)
			http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(page))
			return
		}
		h.Set("Content-Type", a.contentType)
		if r.URL.Query().Get("v") == a.hash {
			h.Set("Cache-Control", "public, max-age=31536000, immutable")
		} else {
			h.Set("Cache-Control", "public, no-cache")
		}
		h.Add("Vary", "Accept-Encoding")
		body, tag := a.body, `"`+a.hash+`"`
		if acceptsGzip(r) {
			body, tag = a.gzipped(), `"`+a.hash+`-gz"`
			h.Set("Content-Encoding", "gzip")
		}
		h.Set("ETag", tag)
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
	})
}

// acceptsGzip reports whether the request's Accept-Encoding allows gzip.
func acceptsGzip(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept-Encoding") {
		for _, part := range strings.Split(v, ",") {
			coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
			if !strings.EqualFold(strings.TrimSpace(coding), "gzip") {
				continue
			}
			params = strings.ReplaceAll(strings.ToLower(params), " ", "")
			return params != "q=0" && params != "q=0.0" && params != "q=0.00" && params != "q=0.000"
		}
	}
	return false
}
