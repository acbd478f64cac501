package gqlhttp

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestCompressSkipSameAsGzhttp: a request gzhttp can select no encoding
// for (no Accept-Encoding, or HEAD) is answered by Compress without
// gzhttp's wrapper, and the answer is gzhttp's: the same status, headers
// and body, whatever the handler writes. Differential, against gzhttp as
// Compress configures it. (A handler that set gzhttp's opt-out header,
// gzhttp.HeaderNoCompression, would see it kept: no handler below Compress
// sets it.)
func TestCompressSkipSameAsGzhttp(t *testing.T) {
	t.Parallel()
	const min = 1024
	big := strings.Repeat(`{"id":"pay_0123456789","status":"SUCCEEDED"},`, 100)
	handlers := map[string]http.HandlerFunc{
		"big JSON": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			_, _ = io.WriteString(w, big)
		},
		"small JSON": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			_, _ = io.WriteString(w, `{"data":null}`)
		},
		"status only": func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) },
		"flushed parts": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "multipart/mixed; boundary=\"-\"")
			for range 3 {
				_, _ = io.WriteString(w, big[:600])
				_ = http.NewResponseController(w).Flush()
			}
		},
		"a Vary of its own": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Add("Vary", "X-Other")
			_, _ = io.WriteString(w, big)
		},
	}
	requests := map[string]func() *http.Request{
		"POST, no Accept-Encoding": func() *http.Request { return httptest.NewRequest(http.MethodPost, "/graphql", nil) },
		"GET, no Accept-Encoding":  func() *http.Request { return httptest.NewRequest(http.MethodGet, "/graphql?query=x", nil) },
		"HEAD, gzip accepted": func() *http.Request {
			r := httptest.NewRequest(http.MethodHead, "/graphql", nil)
			r.Header.Set("Accept-Encoding", "gzip")
			return r
		},
	}
	ours, err := Compress(min)
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := gzhttpWrapper(min)
	if err != nil {
		t.Fatal(err)
	}
	for hn, h := range handlers {
		for rn, req := range requests {
			t.Run(hn+", "+rn, func(t *testing.T) {
				if mayCompress(req()) {
					t.Fatal("the request may be compressed: not the case under test")
				}
				want, got := httptest.NewRecorder(), httptest.NewRecorder()
				theirs(h).ServeHTTP(want, req())
				ours(h).ServeHTTP(got, req())
				if got.Code != want.Code || !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) {
					t.Errorf("status %d body %d bytes, gzhttp's %d and %d bytes", got.Code, got.Body.Len(), want.Code, want.Body.Len())
				}
				if g, w := got.Result().Header, want.Result().Header; !headersEqual(g, w) {
					t.Errorf("headers %q, gzhttp's %q", g, w)
				}
			})
		}
	}
}

func headersEqual(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k, va := range a {
		vb, ok := b[k]
		if !ok || strings.Join(va, "\n") != strings.Join(vb, "\n") {
			return false
		}
	}
	return true
}
