// Reading a request header by its canonical name, without Header.Get.

package gqlhttp

import "net/http"

// FirstHeader is h.Get(key) for a key already in canonical form (as every
// literal name the edge reads is): the first value, or "". net/http
// stores a request's header names canonical; Header.Get canonicalises the
// key it is handed on every call, which the edge's dozen reads a request
// paid for nothing (issue 25: about 2 % of a single payment's CPU in
// memory). TestHeaderSameAsGet. (The gateway's CORS wrapper reads Origin so too.)
func FirstHeader(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}
