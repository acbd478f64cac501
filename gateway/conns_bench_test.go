package gateway

// The connection cap's per-request cost: the server calls its ConnState
// hook twice a request (active, then idle again).

import (
	"net"
	"net/http"
	"testing"
)

func BenchmarkConnCapTrack(b *testing.B) {
	l := newConnCap(nil, 0, nil)
	var conns []net.Conn
	for i := range 32 {
		c := l.admit(newStubConn(i))
		conns = append(conns, c)
	}
	c := conns[7]
	for b.Loop() {
		l.track(c, http.StateActive)
		l.track(c, http.StateIdle)
	}
}
