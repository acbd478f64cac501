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
