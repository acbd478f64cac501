package gateway

import (
	"net/http"

	"github.com/go-chi/chi/v5"
)

// ScopeAround serves mux in the request scope gw serves its own router in
// (the request walk's test rebuilds the /graphql route with recorders).
func ScopeAround(gw *Gateway, mux *chi.Mux) http.Handler {
	return newScopedRouter(mux, gw.router.key)
}

// ChiRouted is gw's handler with POST and GET /graphql routed by chi, as
// every other request is (TestGraphQLBypassesChi).
func ChiRouted(gw *Gateway) http.Handler {
	sr := gw.router
	return newScopedRouter(sr.Mux, sr.key)
}

// Router is gw's router in its request scope, without the batch
// dispatcher in front of it.
func Router(gw *Gateway) http.Handler { return gw.router }
