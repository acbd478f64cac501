package restclient

import (
	"net/http"
	"testing"

	"paygraph/internal/testenv"
)

// newMemServer is newTestServer without a listener: h answers in the
// caller's goroutine through srv.hc's transport. Time-dependent tests use
// it inside a synctest bubble, whose fake clock only moves while every
// goroutine of the bubble is blocked on the bubble's own channels and
// timers (never while one waits on a real socket).
func newMemServer(_ *testing.T, h http.HandlerFunc) *testServer {
	ts := &testServer{URL: "http://rest.test"}
	ts.hc = &http.Client{Transport: testenv.HandlerTransport{H: ts.recording(h)}}
	return ts
}

// memHangingServer is hangingServer in memory: each request waits for
// its context to end.
func memHangingServer(t *testing.T) *testServer {
	return newMemServer(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
}
