package gqlhttp

import (
	"net/http"
	"testing"
)

// TestHeaderSameAsGet: FirstHeader answers as Header.Get for every name the
// edge reads, present, absent, empty, sent twice, or stored under a
// non-canonical name (which Get misses too).
func TestHeaderSameAsGet(t *testing.T) {
	t.Parallel()
	names := []string{"Accept", "Accept-Encoding", "Content-Type", "Upgrade", "Origin", "Access-Control-Request-Method"}
	for _, name := range names {
		if got := http.CanonicalHeaderKey(name); got != name {
			t.Fatalf("%q is not canonical (%q)", name, got)
		}
	}
	for _, tc := range []struct {
		name string
		h    http.Header
	}{
		{"absent", http.Header{}},
		{"nil", nil},
		{"one value", http.Header{"Accept": {"application/json"}, "Upgrade": {"websocket"}, "Origin": {"https://a.example"}}},
		{"empty value", http.Header{"Accept": {""}, "Content-Type": {""}}},
		{"no values", http.Header{"Accept": {}, "Upgrade": nil}},
		{"two lines", http.Header{"Accept-Encoding": {"gzip", "zstd"}, "Content-Type": {"application/json", "text/plain"}}},
		{"stored non-canonical", http.Header{"accept": {"text/event-stream"}, "UPGRADE": {"websocket"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, name := range names {
				if got, want := FirstHeader(tc.h, name), tc.h.Get(name); got != want {
					t.Errorf("FirstHeader(%q) = %q, Get %q", name, got, want)
				}
			}
		})
	}
}

// TestWebsocketSupportsAsGqlgen: the WebSocket transport takes the
// requests gqlgen's takes, and the SSE transport's check in its new order
// answers as before.
func TestWebsocketSupportsAsGqlgen(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, method string
		h            http.Header
	}{
		{"POST JSON", http.MethodPost, http.Header{"Content-Type": {"application/json"}}},
		{"GET upgrade", http.MethodGet, http.Header{"Upgrade": {"websocket"}, "Connection": {"Upgrade"}}},
		{"GET other upgrade", http.MethodGet, http.Header{"Upgrade": {"h2c"}}},
		{"POST empty upgrade", http.MethodPost, http.Header{"Upgrade": {""}}},
		{"POST upgrade twice", http.MethodPost, http.Header{"Upgrade": {"", "websocket"}}},
		{"POST event stream", http.MethodPost, http.Header{"Content-Type": {"application/json"}, "Accept": {"text/event-stream"}}},
		{"POST event stream and JSON", http.MethodPost, http.Header{"Content-Type": {"application/json"}, "Accept": {"text/event-stream, application/json"}}},
		{"GET event stream", http.MethodGet, http.Header{"Accept": {"text/event-stream"}}},
		{"POST event stream not JSON", http.MethodPost, http.Header{"Content-Type": {"text/plain"}, "Accept": {"text/event-stream"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &http.Request{Method: tc.method, Header: tc.h}
			ws := websocket{}
			if got, want := ws.Supports(r), ws.Websocket.Supports(r); got != want {
				t.Errorf("websocket: %v, gqlgen's %v", got, want)
			}
			s := sse{}
			if got, want := s.Supports(r), s.SSE.Supports(r) && wantsEventStream(r.Header.Get("Accept")); got != want {
				t.Errorf("sse: %v, before %v", got, want)
			}
		})
	}
}
