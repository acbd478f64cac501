package gqlhttp

// plainPOST, asked first, against the transports it is asked before.

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/99designs/gqlgen/graphql/handler/transport"
)

// TestPlainPOSTFirst: for every shape of request, plainPOST takes it only
// when none of the transports registered before jsonPOST (OPTIONS, SSE,
// WebSocket, GET) would and jsonPOST would: answering it first changes no
// request's transport. And it does take the plain JSON POSTs.
func TestPlainPOSTFirst(t *testing.T) {
	t.Parallel()
	before := []struct {
		name     string
		supports func(*http.Request) bool
	}{
		{"OPTIONS", transport.Options{}.Supports},
		{"SSE", sse{}.Supports},
		{"WebSocket", websocket{}.Supports},
		{"GET", queryGET{}.Supports},
	}
	first, last := plainPOST{}, jsonPOST{}
	taken := 0
	for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodOptions, http.MethodHead, http.MethodPut} {
		for _, ct := range []string{"", "application/json", "application/json; charset=utf-8", "text/plain", "application/graphql+json"} {
			for _, accept := range []string{"", "application/json", "text/event-stream", "application/graphql-response+json, text/event-stream;q=0.9",
				"text/event-stream;q=0", "*/*", "application/json, text/event-stream"} {
				for _, upgrade := range []string{"", "websocket"} {
					r := httptest.NewRequest(method, "/graphql", nil)
					for k, v := range map[string]string{"Content-Type": ct, "Accept": accept, "Upgrade": upgrade} {
						if v != "" {
							r.Header.Set(k, v)
						}
					}
					name := method + " " + ct + " accept=" + accept + " upgrade=" + upgrade
					if !first.Supports(r) {
						if method == http.MethodPost && upgrade == "" && accept == "application/json" && ct == "application/json" {
							t.Errorf("%s: a plain JSON POST not taken first", name)
						}
						continue
					}
					taken++
					for _, b := range before {
						if b.supports(r) {
							t.Errorf("%s: taken first, but the %s transport takes it", name, b.name)
						}
					}
					if !last.Supports(r) {
						t.Errorf("%s: taken first, but jsonPOST does not take it", name)
					}
				}
			}
		}
	}
	if taken == 0 {
		t.Fatal("plainPOST took no request")
	}
}
