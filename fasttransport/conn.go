package fasttransport

// The connections: dialled here (so that the dial knows whether to speak TLS)
// and watched to tell a reused keep-alive connection that failed before any
// answer byte (net/http retried it).

import (
	"crypto/tls"
	"net"
	"time"

	"github.com/valyala/fasthttp"
)

type dialer struct {
	tls  *tls.Config
	wrap func(net.Conn) net.Conn
}

// dialFunc dials addr within the dial timeout (or the call's time left) and
// with isTLS shakes TLS hands, so the watch below sees plain bytes and
// fasthttp takes it (Handshake) as TLS.
func (d dialer) dialFunc(isTLS bool) fasthttp.DialFuncWithTimeout {
	return func(addr string, timeout time.Duration) (net.Conn, error) {
		limit := DefaultDialTimeout
		if timeout > 0 {
			limit = min(limit, timeout)
		}
		start := time.Now()
		nd := net.Dialer{Timeout: limit, KeepAlive: DefaultKeepAlive}
		raw, err := nd.Dial("tcp", addr)
		if err != nil {
			return nil, err
		}
		if d.wrap != nil {
			raw = d.wrap(raw)
		}
		if !isTLS {
			return new(conn).init(raw), nil
		}
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		cfg := d.tls.Clone() // nil for nil
		if cfg == nil {
			cfg = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		if cfg.ServerName == "" {
			cfg.ServerName = host
		}
		cfg.NextProtos = []string{"http/1.1"}
		hs := DefaultTLSHandshake
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
		w := new(tlsConn)
		w.init(tc)
		return w, nil
	}
}

// conn counts the requests written on it and sees the current answer's first
// byte (one user at a time).
type conn struct {
	net.Conn
	requests int  // requests begun: writes after a read, or the first
	writing  bool // the last call was a Write
	answered bool // a byte was read since the current request began
	local    connAddr
}

// connAddr is the local address, and the way back to the conn from
// Response.LocalAddr after a failure.
type connAddr struct {
	net.Addr
	c *conn
}

func (w *conn) init(c net.Conn) *conn {
	w.Conn = c
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

// Handshake tells fasthttp that the connection is TLS already.
func (c *tlsConn) Handshake() error { return nil }

// failedOnIdle: resp's call failed before any answer byte on a reused
// connection (fasthttp closed it).
func failedOnIdle(resp *fasthttp.Response) bool {
	a, ok := resp.LocalAddr().(*connAddr)
	return ok && a.c.requests > 1 && !a.c.answered
}
