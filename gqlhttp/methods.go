package gqlhttp

import (
	"encoding/json"
	"mime"
	"net/http"
	"net/url"

	"paygraph/graph/errcode"
	"paygraph/graph/trusted"
	"paygraph/internal/opscope"
)

// Methods is the middleware that refuses what no transport takes: a POST not
// JSON (415), a GET not a GraphQL request (400), another method but OPTIONS
// (405, Allow), upgrades but to websocket (400).
func Methods(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodOptions:
		case http.MethodPost:
			if !isJSON(FirstHeader(r.Header, "Content-Type")) {
				refuse(w, r, http.StatusUnsupportedMediaType, errcode.BadUserInput, "Content-Type must be application/json")
				return
			}
		case http.MethodGet:
			if isWebsocket(r) { // its query comes in a message, not the URL
				next.ServeHTTP(w, r)
				return
			}
			if msg := checkGETParams(r.URL.RawQuery); msg != "" {
				refuse(w, r, http.StatusBadRequest, errcode.BadUserInput, msg)
				return
			}
			if id := r.URL.Query().Get("documentId"); id != "" { // persisted documents (graph/trusted)
				r = opscope.Request(r, trusted.WithDocumentID(r.Context(), id))
			}
		default:
			w.Header().Set("Allow", "GET, POST, OPTIONS")
			refuse(w, r, http.StatusMethodNotAllowed, errcode.BadUserInput, "use POST with a JSON body, or GET for queries")
			return
		}
		if FirstHeader(r.Header, "Upgrade") != "" {
			refuse(w, r, http.StatusBadRequest, errcode.BadUserInput, "protocol upgrades other than a GET's to websocket are not supported")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// isJSON reports whether contentType is application/json, with any parameters.
func isJSON(contentType string) bool {
	switch contentType { // the usual spellings, without parsing
	case "application/json", "application/json; charset=utf-8", "application/json;charset=utf-8", "application/json; charset=UTF-8":
		return true
	}
	mediaType, _, err := mime.ParseMediaType(contentType)
	return err == nil && mediaType == "application/json"
}

// checkGETParams returns why a GET's query string is no GraphQL request, or "".
func checkGETParams(rawQuery string) string {
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return "the URL query string is not valid"
	}
	if q.Get("query") == "" && q.Get("extensions") == "" && q.Get("documentId") == "" {
		return "GET needs a query parameter (or a persisted query hash in extensions, or a documentId)"
	}
	for _, name := range [...]string{"variables", "extensions"} {
		if v := q.Get(name); v != "" {
			var obj map[string]any
			if json.Unmarshal([]byte(v), &obj) != nil {
				return name + " must be a JSON object"
			}
		}
	}
	return ""
}

// FirstHeader is h.Get(key) for a key already canonical, without
// canonicalising it (TestHeaderSameAsGet).
func FirstHeader(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}
