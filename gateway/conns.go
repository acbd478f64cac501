// The replica's cap on HTTP connections (issue 22, item 6). An idle
// keep-alive connection costs the process about 21 KB (its goroutine, its
// buffers: 10,000 of them held 211 MiB for the 120 s idle timeout), and
// opening one costs a client nothing. At HTTP_MAX_CONNECTIONS the
// connection idle longest is closed to make room for a new one (an idle
// connection has no request in flight, and its client opens another when
// it needs one); when none is idle, the new connection is closed at once.
// Connections taken over by WebSockets leave the count (their caps are
// the subscriptions').

package gateway

import (
	"net"
	"net/http"
	"sync"
)

// DefaultMaxConnections is HTTP_MAX_CONNECTIONS' default: about 43 MiB
// of idle connections at the measured 21 KB each, a quarter of a pod's
// 160 MiB GOMEMLIMIT, and far more than the keep-alive pools of the load
// balancers and apps in front of one replica hold.
const DefaultMaxConnections = 2048

// connCap is a listener that keeps at most max connections open, with the
// server's ConnState hook (track) telling it which are idle.
type connCap struct {
	net.Listener
	max int

	mu   sync.Mutex
	open map[net.Conn]uint64 // when it went idle, in idles' order (the idle count then); 0: not idle
	// idles counts the connections gone idle: an order, not a clock, is
	// all that choosing the one idle longest needs, and it costs no
	// time.Now per request (a few hundred ns on a VM whose vDSO clock
	// falls back to a system call).
	idles uint64
}

func newConnCap(ln net.Listener, max int) *connCap {
	if max <= 0 { // a Config not made by LoadConfig
		max = DefaultMaxConnections
	}
	return &connCap{Listener: ln, max: max, open: make(map[net.Conn]uint64)}
}

// Accept returns the next connection, making room for it first.
func (l *connCap) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		var victim net.Conn
		if len(l.open) >= l.max {
			var since uint64
			for oc, idle := range l.open {
				if idle != 0 && (victim == nil || idle < since) {
					victim, since = oc, idle
				}
			}
			if victim == nil { // every connection is busy: refuse the new one
				l.mu.Unlock()
				_ = c.Close()
				continue
			}
			delete(l.open, victim)
		}
		l.open[c] = 0
		l.mu.Unlock()
		if victim != nil {
			_ = victim.Close()
		}
		return c, nil
	}
}

// track is the server's ConnState hook.
func (l *connCap) track(c net.Conn, s http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch s {
	case http.StateIdle:
		if _, ok := l.open[c]; ok {
			l.idles++
			l.open[c] = l.idles
		}
	case http.StateActive:
		if _, ok := l.open[c]; ok {
			l.open[c] = 0
		}
	case http.StateHijacked, http.StateClosed:
		delete(l.open, c)
	}
}

// count is the connections held open (the paygraph_connections gauge).
func (l *connCap) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.open)
}
