package testenv

import (
	"bufio"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// RawHTTP serves HTTP/1.1 by hand on a loopback listener, for tests of
// what a faulty server does to its clients: each request read is handed
// to serve with its connection, to write whatever bytes it likes (false
// closes the connection). It returns the base URL; everything is closed
// when the test ends.
func RawHTTP(t testing.TB, serve func(c net.Conn, req *http.Request) bool) string {
	t.Helper()
	return "http://" + acceptAll(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil || !serve(c, req) {
				return
			}
		}
	})
}

// acceptAll listens on loopback and hands each connection to handle on a
// goroutine of its own; when the test ends the listener and every
// connection are closed and the handlers waited for. It returns the address.
func acceptAll(t testing.TB, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var handlers sync.WaitGroup
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
			handlers.Go(func() { handle(c) })
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
		handlers.Wait()
	})
	return ln.Addr().String()
}

// HandlerTransport is an http.RoundTripper that answers each request with
// H in memory (a request whose context ended gets its error), for tests
// in a synctest bubble, which a real connection would leave.
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
