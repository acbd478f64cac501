package fasttransport

// The connections: dialled here (fasthttp's HostClient.DialTimeout, set
// per host client so that the dial knows whether to speak TLS), and
// watched just enough to tell a reused keep-alive connection that failed
// before any byte of its answer, the one failure net/http retried.

import (
	"crypto/tls"
	"net"
	"time"

	"github.com/valyala/fasthttp"
)

type dialer struct {
	timeout, keepAlive, handshake time.Duration
	tls                           *tls.Config
	wrap                          func(net.Conn) net.Conn
}

// dialFunc dials addr ("host:port") within the dial timeout (or the
// call's time left, if shorter), with TCP keep-alive, and with isTLS
// makes the TLS handshake here, with SNI and the configured roots: the
// connection handed to fasthttp is then TLS already (fasthttp takes a
// connection with a Handshake method as one) and the watch below sees
// plain bytes, not TLS records.
func (d dialer) dialFunc(isTLS bool) fasthttp.DialFuncWithTimeout {
	return func(addr string, timeout time.Duration) (net.Conn, error) {
		limit := d.timeout
		if timeout > 0 && timeout < limit {
			limit = timeout
		}
		start := time.Now()
		nd := net.Dialer{Timeout: limit, KeepAlive: d.keepAlive}
		raw, err := nd.Dial("tcp", addr)
		if err != nil {
			return nil, err
		}
		if d.wrap != nil {
			raw = d.wrap(raw)
		}
		if !isTLS {
			return newConn(raw), nil
		}
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		var cfg *tls.Config
		if d.tls != nil {
			cfg = d.tls.Clone()
		} else {
			cfg = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		if cfg.ServerName == "" {
			cfg.ServerName = host
		}
		cfg.NextProtos = []string{"http/1.1"}
		hs := d.handshake
		if left := limit - time.Since(start); timeout > 0 && left < hs {
			hs = left
		}
		tc := tls.Client(raw, cfg)
		_ = tc.SetDeadline(time.Now().Add(hs))
		if err := tc.Handshake(); err != nil {
			_ = raw.Close()
			return nil, err
		}
		_ = tc.SetDeadline(time.Time{})
		return newTLS(tc), nil
	}
}

// conn is a connection that knows how many requests were written on it
// and whether the current one's answer has sent a byte. One goroutine
// uses a connection at a time (fasthttp's pool hands it over under a
// lock), so the fields need no lock of their own.
type conn struct {
	net.Conn
	requests int  // requests begun: writes after a read, or the first
	writing  bool // the last call was a Write
	answered bool // a byte was read since the current request began
	local    connAddr
}

// connAddr is the connection's local address, and the way back to the
// connection from fasthttp's Response.LocalAddr after a failed call.
type connAddr struct {
	net.Addr
	c *conn
}

func newConn(c net.Conn) *conn {
	w := &conn{Conn: c}
	w.local = connAddr{Addr: c.LocalAddr(), c: w}
	return w
}

func (c *conn) LocalAddr() net.Addr { return &c.local }

func (c *conn) Write(p []byte) (int, error) {
	if !c.writing {
		c.writing, c.answered = true, false
		c.requests++
	}
	return c.Conn.Write(p)
}

func (c *conn) Read(p []byte) (int, error) {
	c.writing = false
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.answered = true
	}
	return n, err
}

// tlsConn is a conn over a TLS connection already shaken hands.
type tlsConn struct{ conn }

func newTLS(tc *tls.Conn) *tlsConn {
	w := &tlsConn{conn{Conn: tc}}
	w.local = connAddr{Addr: tc.LocalAddr(), c: &w.conn}
	return w
}

// Handshake tells fasthttp that the connection is TLS already.
func (c *tlsConn) Handshake() error { return nil }

// failedOnIdle says whether the call that resp answered failed on a
// connection that had carried an earlier request, before any byte of its
// answer: net/http's retry case (a keep-alive connection the server
// closed while it was idle). fasthttp closes a connection that failed,
// so nothing else uses it now.
func failedOnIdle(resp *fasthttp.Response) bool {
	a, ok := resp.LocalAddr().(*connAddr)
	return ok && a.c.requests > 1 && !a.c.answered
}
