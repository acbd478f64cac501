// The replica's cap on HTTP connections (HTTP_MAX_CONNECTIONS), shared so that
// no client takes it whole: one TCP peer address (IPv6 by its /64) holds at
// most connShare of it, WebSockets included; TRUSTED_PROXIES have no share. At
// the cap a silent connection goes first, then a trickling one, then the
// idlest, never one being served. An address penalized for its held refusals
// is banned.

package gateway

import (
	"cmp"
	"context"
	"io"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"paygraph/restclient"
)

// DefaultMaxConnections is HTTP_MAX_CONNECTIONS' default: more than the
// pools in front of a replica hold, a quarter of a pod's memory idle.
const DefaultMaxConnections = 2048

const (
	silentAfter = time.Second // a connection still without a request header after it is silent
	// A client moving under minRate bytes a second over trickleAfter trickles
	// (mod_reqtimeout's MinRate).
	minRate      = 500
	trickleAfter = time.Second
)

// connShare is one address's share of a cap: an eighth, at least 16.
func connShare(cap int) int { return max(min(cap, 16), cap/8) }

// connCap is a listener keeping at most max connections open (share per
// address), told by track and serve.
type connCap struct {
	net.Listener
	max, share int
	trusted    []netip.Prefix
	now        func() time.Time

	mu     sync.Mutex
	open   map[*trackedConn]struct{}            // the counted ones (not hijacked)
	byAddr map[string]map[*trackedConn]struct{} // every connection of an address, hijacked included; none of a trusted proxy
	banned map[string]*ban                      // addresses whose new connections are closed (penalize)
	idles  uint64                               // counts the connections gone idle: the order of idleness
}

func newConnCap(ln net.Listener, max int, trusted []netip.Prefix) *connCap {
	if max <= 0 { // a Config not made by LoadConfig
		max = DefaultMaxConnections
	}
	return &connCap{Listener: ln, max: max, share: connShare(max), trusted: trusted, now: time.Now,
		open: make(map[*trackedConn]struct{}), byAddr: make(map[string]map[*trackedConn]struct{}),
		banned: make(map[string]*ban)}
}

// The phases of a request: trackedConn.phase's low bits, the rest counting
// changes so a measure started in one phase is not read in the next.
const (
	phaseServing   = 1 // the handler runs, the body read: the replica's turn
	phaseBody      = 2 // the handler runs, the body not yet read to its end
	phaseFinishing = 3 // the handler returned: the answer is sent, the rest of the body read
)

// ban is an address's penalty: its new connections are closed for d, then
// twice as many let through each d until banLift a d (lifted): a flood never
// gets in at once, a client after it waits seconds.
type ban struct {
	next  time.Time // the current window's end
	d     time.Duration
	allow int // connections let through in this window
	used  int
}

const banLift = 64

// admit reports whether a new connection is let through at now.
func (b *ban) admit(now time.Time) bool {
	if !now.Before(b.next) {
		a := max(1, 2*b.allow)
		for n := now.Sub(b.next) / b.d; n > 0 && a < banLift; n-- { // windows with no connection
			a *= 2
		}
		b.allow, b.used, b.next = a, 0, now.Add(b.d)
	}
	if b.used >= b.allow {
		return false
	}
	b.used++
	return true
}

// trackedConn is one accepted connection.
type trackedConn struct {
	net.Conn
	l        *connCap
	key      string // its address's key; "": a trusted proxy (no share)
	accepted time.Time

	// Under l.mu.
	state    http.ConnState
	idle     uint64 // l.idles when it went idle
	hijacked bool
	gone     bool // left the cap's maps
	mark     uint32
	markAt   time.Time
	markN    int64

	progress atomic.Int64  // bytes read and written
	phase    atomic.Uint32 // phase<<0 | changes<<2
	body     trackedBody   // the request's body (one request at a time on HTTP/1)
	close    sync.Once
}

func (c *trackedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.progress.Add(int64(n))
	return n, err
}

func (c *trackedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.progress.Add(int64(n))
	return n, err
}

// SetWriteBuffer (gqlhttp/live.go) and CloseWrite (net/http's graceful close)
// pass on to the TCP conn.
func (c *trackedConn) SetWriteBuffer(n int) error {
	if sb, ok := c.Conn.(interface{ SetWriteBuffer(int) error }); ok {
		return sb.SetWriteBuffer(n)
	}
	return nil
}

func (c *trackedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// Close leaves the cap and closes the connection (a WebSocket's too).
func (c *trackedConn) Close() error {
	c.close.Do(func() {
		c.l.mu.Lock()
		c.l.forget(c)
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}

func (c *trackedConn) setPhase(p uint32) {
	for {
		old := c.phase.Load()
		if c.phase.CompareAndSwap(old, (old>>2+1)<<2|p) {
			return
		}
	}
}

// trickling reports whether (and how fast) c's client trickles while the
// request waits on it; under l.mu. A phase's first look starts the measure.
func (c *trackedConn) trickling(now time.Time) (rate float64, ok bool) {
	p := c.phase.Load()
	if p&3 != phaseBody && p&3 != phaseFinishing {
		return 0, false
	}
	n := c.progress.Load()
	if c.mark != p {
		c.mark, c.markAt, c.markN = p, now, n
		return 0, false
	}
	el := now.Sub(c.markAt)
	if el < trickleAfter {
		return 0, false
	}
	rate = float64(n-c.markN) / el.Seconds()
	return rate, rate < minRate
}

// trackedBody is a request's body: its end moves it to phaseServing.
type trackedBody struct {
	io.ReadCloser
	c *trackedConn
}

func (b *trackedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.c.setPhase(phaseServing)
	}
	return n, err
}

type trackedConnKey struct{}

// connContext is the server's ConnContext, where serve finds the conn.
func connContext(ctx context.Context, c net.Conn) context.Context {
	if tc, ok := c.(*trackedConn); ok {
		return context.WithValue(ctx, trackedConnKey{}, tc)
	}
	return ctx
}

// serve wraps the server's handler to tell the cap when a request waits on its
// client, when on the replica.
func (l *connCap) serve(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := r.Context().Value(trackedConnKey{}).(*trackedConn)
		if c == nil {
			h.ServeHTTP(w, r)
			return
		}
		if r.Body != nil && r.Body != http.NoBody {
			c.body = trackedBody{ReadCloser: r.Body, c: c}
			r.Body = &c.body
			c.setPhase(phaseBody)
		} else {
			c.setPhase(phaseServing)
		}
		h.ServeHTTP(w, r)
		c.setPhase(phaseFinishing)
	})
}

// Accept returns the next connection admitted.
func (l *connCap) Accept() (net.Conn, error) {
	for {
		nc, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if c := l.admit(nc); c != nil {
			return c, nil
		}
	}
}

// admit counts nc in, closing another to make room, or closes nc (nil).
func (l *connCap) admit(nc net.Conn) *trackedConn {
	now := l.now()
	c := &trackedConn{Conn: nc, l: l, key: l.keyOf(nc.RemoteAddr()), accepted: now}
	var victims []*trackedConn
	// room takes a connection of conns out to make room, or reports none may go.
	room := func(conns map[*trackedConn]struct{}) bool {
		v := l.victim(conns, now)
		if v != nil {
			victims = append(victims, v)
			l.forget(v)
		}
		return v != nil
	}
	l.mu.Lock()
	ok := true
	if c.key != "" {
		if b := l.banned[c.key]; b != nil {
			ok = b.admit(now)
			if b.allow >= banLift {
				delete(l.banned, c.key)
			}
		}
		if own := l.byAddr[c.key]; ok && len(own) >= l.share {
			ok = room(own)
		}
	}
	if ok && len(l.open) >= l.max {
		ok = room(l.open)
	}
	if ok {
		l.open[c] = struct{}{}
		if c.key != "" {
			own := l.byAddr[c.key]
			if own == nil {
				own = make(map[*trackedConn]struct{})
				l.byAddr[c.key] = own
			}
			own[c] = struct{}{}
		}
	}
	l.mu.Unlock()
	for _, v := range victims {
		_ = v.Conn.Close()
	}
	if !ok {
		_ = nc.Close()
		return nil
	}
	return c
}

// victim is the connection of conns to close first, nil when all are served or
// WebSockets; under l.mu.
func (l *connCap) victim(conns map[*trackedConn]struct{}, now time.Time) *trackedConn {
	var silent, slow, idle *trackedConn
	var slowest float64
	for c := range conns {
		switch {
		case c.hijacked:
		case c.state == http.StateNew:
			if now.Sub(c.accepted) >= silentAfter && (silent == nil || c.accepted.Before(silent.accepted)) {
				silent = c
			}
		case c.state == http.StateIdle:
			if idle == nil || c.idle < idle.idle {
				idle = c
			}
		case c.state == http.StateActive:
			if rate, ok := c.trickling(now); ok && (slow == nil || rate < slowest) {
				slow, slowest = c, rate
			}
		}
	}
	return cmp.Or(silent, slow, idle)
}

// forget takes c out of the cap's maps; under l.mu.
func (l *connCap) forget(c *trackedConn) {
	if c.gone {
		return
	}
	c.gone = true
	delete(l.open, c)
	if own := l.byAddr[c.key]; own != nil {
		delete(own, c)
		if len(own) == 0 {
			delete(l.byAddr, c.key)
		}
	}
}

// keyOf is a peer's share key (restclient.AddressKey); "" for a trusted proxy.
func (l *connCap) keyOf(a net.Addr) string {
	var addr netip.Addr
	if ta, ok := a.(*net.TCPAddr); ok {
		addr, _ = netip.AddrFromSlice(ta.IP)
	} else if ap, err := netip.ParseAddrPort(a.String()); err == nil {
		addr = ap.Addr()
	}
	addr = addr.Unmap()
	for _, p := range l.trusted {
		if p.Contains(addr) {
			return ""
		}
	}
	return restclient.AddressKey(addr)
}

// penalize bans addr (never a trusted proxy) for d; at most max are held, the
// lapsed dropped first.
func (l *connCap) penalize(addr netip.Addr, d time.Duration) {
	if d <= 0 {
		return
	}
	key := l.keyOf(net.TCPAddrFromAddrPort(netip.AddrPortFrom(addr, 0)))
	if key == "" {
		return
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.banned[key]; !ok && len(l.banned) >= l.max {
		maps.DeleteFunc(l.banned, func(_ string, b *ban) bool { return !now.Before(b.next.Add(b.d)) })
		if len(l.banned) >= l.max {
			return
		}
	}
	l.banned[key] = &ban{next: now.Add(d), d: d}
}

// track is the server's ConnState hook.
func (l *connCap) track(nc net.Conn, s http.ConnState) {
	c, ok := nc.(*trackedConn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.gone {
		return
	}
	switch s {
	case http.StateIdle:
		l.idles++
		c.idle, c.state = l.idles, s
		c.setPhase(0)
	case http.StateActive:
		// The header is read: the handler's turn, until serve says.
		c.state = s
		c.setPhase(phaseServing)
	case http.StateHijacked:
		// A WebSocket: out of the replica's count, not its address's.
		c.state, c.hijacked = s, true
		delete(l.open, c)
	case http.StateClosed:
		l.forget(c)
	}
}

// count is the connections held open (the paygraph_connections gauge).
func (l *connCap) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.open)
}
