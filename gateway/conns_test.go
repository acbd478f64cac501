package gateway

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestConnCap: past the cap, the longest idle keep-alive connections are
// closed to make room, and a new client is still served.
func TestConnCap(t *testing.T) {
	const max, clients = 10, 50
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns := newConnCap(ln, max)
	srv := &http.Server{
		Handler:   http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") }),
		ConnState: conns.track,
	}
	go func() { _ = srv.Serve(conns) }()
	t.Cleanup(func() { _ = srv.Close() })

	// Each client makes one request and keeps its connection open.
	open := make([]net.Conn, 0, clients)
	for i := 0; i < clients; i++ {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: gw\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("client %d: %v", i, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		open = append(open, c)
	}
	if n := conns.count(); n > max {
		t.Errorf("the server holds %d connections, want at most %d", n, max)
	}
	// The clients whose connections were closed see EOF; the newest stay.
	closed := 0
	for _, c := range open {
		_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err == io.EOF {
			closed++
		}
	}
	if closed < clients-max {
		t.Errorf("%d connections closed by the server, want at least %d", closed, clients-max)
	}
	resp, err := http.Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatalf("a new client at the cap: %v", err)
	}
	resp.Body.Close()
}
