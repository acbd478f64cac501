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

// Router is gw's router in its request scope, without the batch
// dispatcher in front of it.
func Router(gw *Gateway) http.Handler { return gw.router }
