package gateway

import (
	"net/http"

	"github.com/go-chi/chi/v5"
)

// ScopeAround serves mux in the request scope gw serves its own router in
// (the request walk's test rebuilds the /graphql route with recorders).
func ScopeAround(gw *Gateway, mux *chi.Mux) http.Handler {
	return newScopedRouter(mux, gw.Handler.(*scopedRouter).key)
}

// ChiRouted is gw's handler with POST and GET /graphql routed by chi, as
// every other request is (TestGraphQLBypassesChi).
func ChiRouted(gw *Gateway) http.Handler {
	sr := gw.Handler.(*scopedRouter)
	return newScopedRouter(sr.Mux, sr.key)
}
