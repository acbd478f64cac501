package gqlhttp_test

import (
	"net/http"
	"net/http/httptest"
	"paygraph/graph/errcode"
	"testing"

	"paygraph/gqlhttp"
)

// TestMethods: what the transports take passes; anything else is refused
// with a code and the status that says why, before any transport sees it.
func TestMethods(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, method, rawQuery, contentType, upgrade string
		status                                       int // 0: passes
		allow                                        string
	}{
		{"POST JSON", http.MethodPost, "", "application/json", "", 0, ""},
		{"POST JSON with charset", http.MethodPost, "", "application/json; charset=utf-8", "", 0, ""},
		{"POST JSON, odd spelling", http.MethodPost, "", "Application/JSON ; charset=latin1", "", 0, ""},
		{"GET query", http.MethodGet, "query=%7B__typename%7D", "", "", 0, ""},
		{"GET persisted query", http.MethodGet, `extensions=%7B%7D`, "", "", 0, ""},
		{"OPTIONS", http.MethodOptions, "", "", "", 0, ""},
		{"POST text/plain", http.MethodPost, "", "text/plain", "", http.StatusUnsupportedMediaType, ""},
		{"POST no content type", http.MethodPost, "", "", "", http.StatusUnsupportedMediaType, ""},
		{"POST multipart", http.MethodPost, "", "multipart/form-data; boundary=x", "", http.StatusUnsupportedMediaType, ""},
		{"GET without query", http.MethodGet, "", "", "", http.StatusBadRequest, ""},
		{"GET variables not an object", http.MethodGet, "query=%7B__typename%7D&variables=%5B%5D", "", "", http.StatusBadRequest, ""},
		{"GET extensions not JSON", http.MethodGet, "query=%7B__typename%7D&extensions=%7B", "", "", http.StatusBadRequest, ""},
		{"GET bad escape", http.MethodGet, "query=%7B__typename%7D&x=%zz", "", "", http.StatusBadRequest, ""},
		{"PUT", http.MethodPut, "", "application/json", "", http.StatusMethodNotAllowed, "GET, POST, OPTIONS"},
		{"DELETE", http.MethodDelete, "", "", "", http.StatusMethodNotAllowed, "GET, POST, OPTIONS"},
		{"websocket upgrade (the subscription transport's)", http.MethodGet, "", "", "websocket", 0, ""},
		{"websocket upgrade, odd case", http.MethodGet, "", "", "WebSocket", 0, ""},
		{"h2c upgrade", http.MethodGet, "query=%7B__typename%7D", "", "h2c", http.StatusBadRequest, ""},
		{"websocket upgrade on a POST", http.MethodPost, "", "application/json", "websocket", http.StatusBadRequest, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reached := false
			h := gqlhttp.Methods(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				reached = true
				w.WriteHeader(http.StatusNoContent)
			}))
			req := httptest.NewRequest(tc.method, "/graphql", nil)
			req.URL.RawQuery = tc.rawQuery
			if tc.contentType != "" {
				req.Header.Set("Content-Type", tc.contentType)
			}
			if tc.upgrade != "" {
				req.Header.Set("Upgrade", tc.upgrade)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if tc.status == 0 {
				if !reached {
					t.Fatalf("refused: %d %s", rec.Code, rec.Body)
				}
				return
			}
			if reached || rec.Code != tc.status {
				t.Fatalf("reached %v, status %d, want %d", reached, rec.Code, tc.status)
			}
			if code := decodeRefusal(t, rec); code != errcode.BadUserInput {
				t.Errorf("code %s", code)
			}
			if got := rec.Header().Get("Allow"); got != tc.allow {
				t.Errorf("Allow %q, want %q", got, tc.allow)
			}
		})
	}
}
