package gateway

// The REST API's transport: a connection pool per credential pair, so that a
// connection put out of step by a faulty answer can at worst answer a pair's
// call with its own earlier answer, never another's. A pool is
// fasttransport's, or net/http's behind an HTTP proxy (fasthttp speaks to
// none).

import (
	"cmp"
	"context"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"paygraph/fasttransport"
	"paygraph/restclient"
)

// restPools is the REST API's http.RoundTripper: a pool per credential pair
// (restclient.MerchantOf), made at its first call. max (REST_MAX_INFLIGHT)
// bounds the pools kept and the connections open across them: past it, the
// least recently used lose their idle ones.
type restPools struct {
	// newPool makes a pool whose connections are counted by counted.
	newPool func(counted func(net.Conn) net.Conn) pool
	max     int
	open    atomic.Int64 // connections open across the pools

	mu    sync.Mutex
	pools *simplelru.LRU[string, pool]
}

// pool is one pair's connections: fasttransport's or net/http's.
type pool interface {
	http.RoundTripper
	CloseIdleConnections()
}

// newTransport is the transport to cfg.RESTBaseURL. A pool keeps as many
// connections as its pair's calls in flight, so steady load reuses them.
func newTransport(cfg Config) *restPools {
	perPair := cmp.Or(cfg.RESTMaxInFlightPerMerchant, restclient.DefaultMaxInFlightPerMerchant)
	bound := cmp.Or(cfg.RESTMaxInFlight, restclient.DefaultMaxInFlight)
	p := &restPools{max: bound}
	// A dropped pool's calls in flight finish; its idle connections close.
	p.pools, _ = simplelru.NewLRU(bound, func(_ string, t pool) { t.CloseIdleConnections() })
	maxBody := int(cmp.Or(cfg.RESTMaxBody, restclient.DefaultMaxBodyBytes))
	maxPage := int(cmp.Or(cfg.RESTMaxPage, restclient.DefaultMaxPageBytes))
	fast := fasttransport.Config{
		MaxConnsPerHost:       perPair,
		ResponseHeaderTimeout: cfg.RESTTimeout,
		// fasthttp holds an answer whole: held to restclient's limit.
		MaxResponseBytes: max(maxBody, maxPage),
		MaxResponseBytesFor: func(r *http.Request) int {
			if restclient.EndpointOf(r.URL) == restclient.EndpointListPayments {
				return maxPage
			}
			return maxBody
		},
	}
	p.newPool = func(counted func(net.Conn) net.Conn) pool {
		c := fast
		c.WrapConn = counted
		return fasttransport.New(c)
	}
	if behindProxy(cfg.RESTBaseURL) {
		p.newPool = httpPools(cfg, perPair, http.ProxyFromEnvironment)
	}
	return p
}

// httpPools makes the net/http pools of newTransport, through proxy.
func httpPools(cfg Config, perPair int, proxy func(*http.Request) (*url.URL, error)) func(counted func(net.Conn) net.Conn) pool {
	template := &http.Transport{
		Proxy:                 proxy,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          perPair,
		MaxIdleConnsPerHost:   perPair,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   5 * time.Second,
		ResponseHeaderTimeout: cfg.RESTTimeout,
		ExpectContinueTimeout: time.Second,
	}
	return func(counted func(net.Conn) net.Conn) pool {
		t := template.Clone()
		dialer := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
		t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return counted(c), nil
		}
		return t
	}
}

// behindProxy says whether HTTP_PROXY, HTTPS_PROXY and NO_PROXY send calls to
// baseURL through a proxy.
func behindProxy(baseURL string) bool {
	r, err := http.NewRequest(http.MethodGet, baseURL, nil)
	if err != nil {
		return false
	}
	u, err := http.ProxyFromEnvironment(r)
	return err != nil || u != nil
}

// RoundTrip sends r through the pool of its credential pair.
func (p *restPools) RoundTrip(r *http.Request) (*http.Response, error) {
	key, _ := restclient.MerchantOf(r.Context())
	return p.pool(key).RoundTrip(r)
}

// pool is key's pool, made when it has none.
func (p *restPools) pool(key string) pool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if t, ok := p.pools.Get(key); ok {
		return t
	}
	var t pool
	t = p.newPool(func(c net.Conn) net.Conn {
		if p.open.Add(1) > int64(p.max) {
			p.trim(t)
		}
		return &countedConn{Conn: c, open: &p.open}
	})
	p.pools.Add(key, t)
	return t
}

// trim closes the idle connections of the least recently used pools but keep
// until at most max are open.
func (p *restPools) trim(keep pool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, t := range p.pools.Values() { // the least recently used first
		if p.open.Load() <= int64(p.max) {
			return
		}
		if t != keep {
			t.CloseIdleConnections()
		}
	}
}

// DropIdle closes the idle connections of ctx's pair's pool
// (restclient.Config.DropIdle), so it dials.
func (p *restPools) DropIdle(ctx context.Context) {
	key, _ := restclient.MerchantOf(ctx)
	p.mu.Lock()
	t, ok := p.pools.Peek(key)
	p.mu.Unlock()
	if ok {
		t.CloseIdleConnections()
	}
}

// countedConn is a connection of a pool, counted in open until closed.
type countedConn struct {
	net.Conn
	open   *atomic.Int64
	closed atomic.Bool
}

func (c *countedConn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.open.Add(-1)
	}
	return c.Conn.Close()
}

// unsolicited begins the line net/http's transport logs when an idle pooled
// connection receives bytes: it quotes them, and they are a REST answer,
// customer data.
const unsolicited = "Unsolicited response received on idle HTTP channel"

// cutUnsolicited is s, or the unsolicited line without the bytes (redaction
// calls it on every string).
func cutUnsolicited(s string) string {
	if strings.HasPrefix(s, unsolicited) {
		return unsolicited + " (its bytes not logged): the REST API answered more than was asked; the connection is closed"
	}
	return s
}
