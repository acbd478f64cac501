package restclient

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// newMemServer is newTestServer without a listener: h answers in the
// caller's goroutine through srv.hc's transport. Time-dependent tests use
// it inside a synctest bubble, whose fake clock only moves while every
// goroutine of the bubble is blocked on the bubble's own channels and
// timers (never while one waits on a real socket).
func newMemServer(_ *testing.T, h http.HandlerFunc) *testServer {
	ts := &testServer{URL: "http://rest.test"}
	ts.hc = &http.Client{Transport: handlerRT{ts.recording(h)}}
	return ts
}

// handlerRT answers a request with a handler, as a server would: a
// request whose context ends first gets the context's error.
type handlerRT struct{ h http.Handler }

func (rt handlerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	rt.h.ServeHTTP(rec, r)
	if err := r.Context().Err(); err != nil {
		return nil, err
	}
	resp := rec.Result()
	resp.Request = r
	return resp, nil
}

// memHangingServer is hangingServer in memory: each request waits for
// its context to end.
func memHangingServer(t *testing.T) *testServer {
	return newMemServer(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
}

// memJSONServer is jsonServer in memory.
func memJSONServer(t *testing.T, status int, body string) *testServer {
	return newMemServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	})
}
