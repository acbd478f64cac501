package gqlhttp

import "net/http"

// FirstHeader is h.Get(key) for a key already in canonical form: the first
// value, or "", without canonicalising key again (TestHeaderSameAsGet).
func FirstHeader(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}
