package gateway

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// stubConn is an accepted connection of the cap's unit tests: a peer
// address, and whether the cap closed it.
type stubConn struct {
	net.Conn // nil: nothing reads or writes it
	peer     *net.TCPAddr
	closed   atomic.Bool
}

// newStubConn is a connection from 10.0.<i/256>.<i%256>.
func newStubConn(i int) *stubConn {
	return stubFrom(fmt.Sprintf("10.0.%d.%d", i/256%256, i%256))
}

func stubFrom(addr string) *stubConn {
	return &stubConn{peer: net.TCPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr(addr), 40000))}
}

func (s *stubConn) RemoteAddr() net.Addr { return s.peer }
func (s *stubConn) Close() error         { s.closed.Store(true); return nil }

// TestConnShare: one address's share of HTTP_MAX_CONNECTIONS is an eighth
// of it, at least 16 (all of a smaller cap).
func TestConnShare(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		max, out int
	}{
		{"the least cap", 16, 16},
		{"a small cap: the floor", 64, 16},
		{"the default", DefaultMaxConnections, 256},
		{"the largest", 1 << 20, 1 << 17},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := connShare(c.max); got != c.out {
				t.Fatalf("connShare(%d) = %d, want %d", c.max, got, c.out)
			}
		})
	}
}

// TestConnCapOrder: at the cap, a silent connection goes first, then one
// whose client trickles, then the one idle longest; one being served
// never does, and when none may go the new connection is closed.
func TestConnCapOrder(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const max = 16 // each from an address of its own: no share applies
		l := newConnCap(nil, max, nil)
		accept := func(i int) (*stubConn, *trackedConn) {
			s := newStubConn(i)
			c := l.admit(s)
			if c == nil {
				t.Fatalf("connection %d refused", i)
			}
			return s, c
		}
		var serving []*stubConn
		idleS, idle := accept(0)
		l.track(idle, http.StateActive)
		l.track(idle, http.StateIdle)
		trickleS, trickle := accept(1)
		l.track(trickle, http.StateActive)
		trickle.setPhase(phaseBody)
		fastS, fast := accept(2) // a body read fast: above minRate
		l.track(fast, http.StateActive)
		fast.setPhase(phaseBody)
		for i := 3; i < max-1; i++ {
			s, c := accept(i)
			l.track(c, http.StateActive)
			l.track(c, http.StateIdle) // idle after the first one: closed later
			l.track(c, http.StateActive)
			serving = append(serving, s)
		}
		silentS, _ := accept(max - 1) // no request at all
		if n := l.count(); n != max {
			t.Fatalf("count %d, want %d", n, max)
		}

		// Within silentAfter a new connection is no one's victim: the
		// idle one goes, and the cap starts measuring the trickling.
		time.Sleep(silentAfter / 2)
		// (each new one sends its request at once: it is served)
		n1, c := accept(100)
		l.track(c, http.StateActive)
		if !idleS.closed.Load() || silentS.closed.Load() {
			t.Fatalf("idle closed %v, silent closed %v: want the idle one only", idleS.closed.Load(), silentS.closed.Load())
		}
		// Past silentAfter the silent one goes first.
		time.Sleep(silentAfter)
		fast.progress.Add(10 * minRate)
		_, c = accept(101)
		l.track(c, http.StateActive)
		if !silentS.closed.Load() || trickleS.closed.Load() {
			t.Fatalf("silent closed %v, trickling closed %v: want the silent one", silentS.closed.Load(), trickleS.closed.Load())
		}
		// Then the trickling one (fewer than minRate bytes a second over
		// trickleAfter), never the fast one.
		trickle.progress.Add(minRate / 4)
		_, c = accept(102)
		l.track(c, http.StateActive)
		if !trickleS.closed.Load() || fastS.closed.Load() {
			t.Fatalf("trickling closed %v, fast closed %v: want the trickling one", trickleS.closed.Load(), fastS.closed.Load())
		}
		// Every one is served: the next new connection is closed, and
		// nothing else.
		s := newStubConn(103)
		if l.admit(s) != nil || !s.closed.Load() {
			t.Fatal("a new connection admitted when every one is served or just opened")
		}
		for _, s := range append(serving, fastS, n1) {
			if s.closed.Load() {
				t.Fatalf("a connection being served (%v) was closed", s.peer)
			}
		}
		if n := l.count(); n != max {
			t.Fatalf("count %d, want %d", n, max)
		}
		// An answer sent after the handler slower than minRate trickles too.
		fast.setPhase(phaseFinishing)
		if l.admit(newStubConn(104)) != nil { // measures
			t.Fatal("admitted before the answer was measured")
		}
		time.Sleep(trickleAfter)
		accept(105)
		if !fastS.closed.Load() {
			t.Fatal("a request whose answer trickles out was not closed")
		}
	})
}

// TestConnCapShare: one address holds at most its share, WebSockets
// included; at it, its new connection takes the place of its own idle
// one, or is closed; another address is admitted all along, and a
// trusted proxy has no share.
func TestConnCapShare(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const max = 64
		share := connShare(max)
		l := newConnCap(nil, max, []netip.Prefix{netip.MustParsePrefix("10.9.0.0/16")})
		var flood []*trackedConn
		for range share {
			c := l.admit(stubFrom("192.0.2.7"))
			if c == nil {
				t.Fatal("refused within the share")
			}
			l.track(c, http.StateActive)
			flood = append(flood, c)
		}
		time.Sleep(silentAfter * 2)
		over := stubFrom("192.0.2.7")
		if l.admit(over) != nil || !over.closed.Load() {
			t.Fatal("the address's connection past its share was admitted")
		}
		if l.admit(stubFrom("198.51.100.1")) == nil {
			t.Fatal("another address refused")
		}
		// Its idle one makes room for its new one; nobody else's.
		l.track(flood[3], http.StateIdle)
		if l.admit(stubFrom("192.0.2.7")) == nil || !flood[3].Conn.(*stubConn).closed.Load() {
			t.Fatal("the address's new connection did not take its idle one's place")
		}
		// Its WebSockets leave the replica's count, not its share.
		for _, c := range flood[4:] {
			l.track(c, http.StateHijacked)
		}
		if n := l.count(); n != 5 {
			t.Fatalf("count %d, want 5 (4 HTTP connections of the address, 1 of another)", n)
		}
		if l.admit(stubFrom("192.0.2.7")) != nil {
			t.Fatal("admitted past the share of the address's WebSockets")
		}
		// A closed WebSocket frees its place.
		_ = flood[4].Close()
		if l.admit(stubFrom("192.0.2.7")) == nil {
			t.Fatal("refused after one of its WebSockets closed")
		}
		// The same /64 is one address.
		for range share {
			_ = l.admit(stubFrom("2001:db8::1"))
		}
		if l.admit(stubFrom("2001:db8::ffff")) != nil {
			t.Fatal("another address of the same /64 admitted past its share")
		}
		// A trusted proxy carries many clients: no share, no map entry.
		for i := range share * 2 {
			if l.admit(stubFrom(fmt.Sprintf("10.9.0.%d", i%3))) == nil {
				t.Fatal("a trusted proxy's connection refused")
			}
		}
		l.mu.Lock()
		keys := len(l.byAddr)
		l.mu.Unlock()
		if keys != 3 {
			t.Fatalf("%d addresses held, want 3 (no trusted proxy)", keys)
		}
	})
}

// TestConnCapPenalize: an address penalized (its refusals fill their
// share of the held ones) has its new connections closed at accept for
// the time given, then let through one, two, four... a window while no
// penalty renews it, and the ban lifted after a few quiet windows; other
// addresses and trusted proxies are never refused; the addresses held are
// bounded.
func TestConnCapPenalize(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const d = time.Second
		l := newConnCap(nil, 16, []netip.Prefix{netip.MustParsePrefix("10.9.0.0/16")})
		flood := netip.MustParseAddr("192.0.2.7")
		admitted := func(n int) int {
			got := 0
			for range n {
				if c := l.admit(stubFrom("192.0.2.7")); c != nil {
					got++
					_ = c.Close()
				}
			}
			return got
		}
		l.penalize(flood, d)
		l.penalize(netip.MustParseAddr("10.9.0.1"), d) // a trusted proxy: never
		if n := admitted(10); n != 0 {
			t.Fatalf("%d of a penalized address's connections admitted, want 0", n)
		}
		if l.admit(stubFrom("198.51.100.1")) == nil || l.admit(stubFrom("10.9.0.1")) == nil {
			t.Fatal("another address refused")
		}
		for _, want := range []int{1, 2, 4} {
			time.Sleep(d)
			if n := admitted(10); n != want {
				t.Fatalf("%d admitted in a quiet window, want %d", n, want)
			}
		}
		// A penalty renews the ban: none again for d.
		l.penalize(flood, d)
		if n := admitted(10); n != 0 {
			t.Fatalf("%d admitted after a renewal, want 0", n)
		}
		time.Sleep(d)
		if n := admitted(10); n != 1 {
			t.Fatalf("%d admitted a window after the renewal, want 1", n)
		}
		// Quiet long enough: lifted.
		time.Sleep(10 * d)
		if n := admitted(100); n != 100 {
			t.Fatalf("%d of 100 admitted after the flood stopped, want all", n)
		}
		l.mu.Lock()
		_, still := l.banned[flood.String()]
		l.mu.Unlock()
		if still {
			t.Fatal("the lifted ban is still held")
		}
		for i := range 100 {
			l.penalize(netip.AddrFrom4([4]byte{203, 0, 113, byte(i)}), d)
		}
		l.mu.Lock()
		n := len(l.banned)
		l.mu.Unlock()
		if n > l.max {
			t.Fatalf("%d penalized addresses held, want at most %d", n, l.max)
		}
	})
}

// TestConnCap: past the cap, the longest idle keep-alive connections are
// closed to make room, and a new client is still served.
func TestConnCap(t *testing.T) {
	const max, clients = 16, 50
	srv, addr, conns := serveCapped(t, max)
	_ = srv

	// Each client makes one request and keeps its connection open.
	open := make([]net.Conn, 0, clients)
	for i := 0; i < clients; i++ {
		c, err := net.Dial("tcp", addr)
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
	resp, err := http.Get("http://" + addr + "/")
	if err != nil {
		t.Fatalf("a new client at the cap: %v", err)
	}
	resp.Body.Close()
}

// TestConnCapSilentFlood: one address's silent connections (and requests
// whose bodies never come), as many as the cap, never keep another
// address's client out.
func TestConnCapSilentFlood(t *testing.T) {
	const max = 32
	_, addr, conns := serveCapped(t, max)
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
	for i := range max * 2 {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if i%2 == 1 { // a header, then a body that never comes
			_, _ = io.WriteString(c, "POST / HTTP/1.1\r\nHost: gw\r\nContent-Length: 1000\r\n\r\n{")
		}
	}
	for i := range 10 {
		c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
		resp, err := c.Get("http://" + addr + "/")
		if err != nil {
			t.Fatalf("request %d from another address: %v (%d connections held)", i, err, conns.count())
		}
		resp.Body.Close()
	}
}

// serveCapped serves "ok" on a loopback listener under a connCap.
func serveCapped(t *testing.T, max int) (*http.Server, string, *connCap) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns := newConnCap(ln, max, nil)
	srv := &http.Server{
		Handler: conns.serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			_, _ = io.WriteString(w, "ok")
		})),
		ConnState:   conns.track,
		ConnContext: connContext,
	}
	go func() { _ = srv.Serve(conns) }()
	t.Cleanup(func() { _ = srv.Close() })
	return srv, ln.Addr().String(), conns
}

// TestConnCapPhases: the handler's wrapper tells the cap when a request
// waits on its client (its body not yet read to its end, its answer after
// the handler) and when on the replica (the handler with the body read,
// or with none).
func TestConnCapPhases(t *testing.T) {
	t.Parallel()
	l := newConnCap(nil, 16, nil)
	c := l.admit(newStubConn(1))
	phase := func() uint32 { return c.phase.Load() & 3 }
	seen := make(chan uint32, 2)
	h := l.serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- phase()
		_, _ = io.Copy(io.Discard, r.Body)
		seen <- phase()
	}))
	body, send := io.Pipe()
	req := httptest.NewRequest(http.MethodPost, "/graphql", body).WithContext(connContext(context.Background(), c))
	done := make(chan struct{})
	go func() { defer close(done); h.ServeHTTP(httptest.NewRecorder(), req) }()
	if p := <-seen; p != phaseBody {
		t.Fatalf("before the body: phase %d, want %d (the client's turn)", p, phaseBody)
	}
	_, _ = send.Write([]byte(`{"query":"{ __typename }"}`))
	_ = send.Close()
	if p := <-seen; p != phaseServing {
		t.Fatalf("the body read: phase %d, want %d (the replica's turn)", p, phaseServing)
	}
	<-done
	if p := phase(); p != phaseFinishing {
		t.Fatalf("after the handler: phase %d, want %d (the answer goes out)", p, phaseFinishing)
	}
	l.track(c, http.StateIdle)
	l.track(c, http.StateActive)
	get := httptest.NewRequest(http.MethodGet, "/healthz", nil).WithContext(connContext(context.Background(), c))
	l.serve(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { seen <- phase() })).ServeHTTP(httptest.NewRecorder(), get)
	if p := <-seen; p != phaseServing {
		t.Fatalf("a request without a body: phase %d, want %d", p, phaseServing)
	}
}
