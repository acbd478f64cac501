package gateway

import (
	"context"
	"net"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
)

// ScopeAround serves mux in the request scope gw serves its own router in
// (the request walk's test rebuilds the /graphql route with recorders).
func ScopeAround(gw *Gateway, mux *chi.Mux) http.Handler {
	return newScopedRouter(mux, gw.router.key)
}

// Router is gw's router in its request scope, without the batch
// dispatcher in front of it.
func Router(gw *Gateway) http.Handler { return gw.router }

// Serve is ServeProbes without a probes listener.
func (g *Gateway) Serve(ctx context.Context, ln net.Listener) error {
	return g.ServeProbes(ctx, ln, nil)
}

// WithRESTTransport sets the transport to the REST API (stubs), WithClock
// the session tokens' clock (default time.Now).
func WithRESTTransport(rt http.RoundTripper) Option { return func(o *options) { o.restTransport = rt } }
func WithClock(now func() time.Time) Option         { return func(o *options) { o.clock = now } }

// CloseIdleConnections closes every pool's idle connections.
func (p *restPools) CloseIdleConnections() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, t := range p.pools.Values() {
		t.CloseIdleConnections()
	}
}
