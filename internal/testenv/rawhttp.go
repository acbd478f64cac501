package testenv

import (
	"bufio"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// RawHTTP serves HTTP/1.1 on a loopback listener of its own by hand, for
// tests of what a faulty server does to its clients (answers doubled,
// past or short of their Content-Length): each request read from a
// connection is handed to serve with the connection, which writes
// whatever bytes it likes; serve returning false closes the connection.
// It returns the base URL; the listener and every connection are closed
// when the test ends.
func RawHTTP(t testing.TB, serve func(c net.Conn, req *http.Request) bool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[c] = true
			mu.Unlock()
			wg.Go(func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil || !serve(c, req) {
						return
					}
				}
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return "http://" + ln.Addr().String()
}

// HandlerTransport is an http.RoundTripper that answers each request with
// h, in memory, as a server would: a request whose context ends first
// gets the context's error. Tests on a fake clock (testing/synctest) use
// it where a real connection would leave the bubble.
type HandlerTransport struct{ H http.Handler }

func (rt HandlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	rt.H.ServeHTTP(rec, r)
	if err := r.Context().Err(); err != nil {
		return nil, err
	}
	resp := rec.Result()
	resp.Request = r
	return resp, nil
}
