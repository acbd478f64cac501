package gateway

// The connection cap's per-request cost: the server calls its ConnState
// hook twice a request (active, then idle again).

import (
	"net"
	"net/http"
	"testing"
)

func BenchmarkConnCapTrack(b *testing.B) {
	l := newConnCap(nil, 0)
	var conns []net.Conn
	for range 32 {
		c, s := net.Pipe()
		b.Cleanup(func() { c.Close(); s.Close() })
		conns = append(conns, c)
		l.open[c] = 0
	}
	c := conns[7]
	for b.Loop() {
		l.track(c, http.StateActive)
		l.track(c, http.StateIdle)
	}
}
