package graph_test

import (
	"net/http"
	"testing"

	"github.com/99designs/gqlgen/graphql/handler"

	"paygraph/gqlhttp"
	"paygraph/graph"
)

// serveGraphQL is the /graphql route as the gateway composes it around
// the rig cfg says: the edge's transports and its reading of the caller's
// credential headers.
func serveGraphQL(t testing.TB, cfg graph.RigConfig) (http.Handler, *graph.Rig) {
	t.Helper()
	cfg.Transports = func(srv *handler.Server) { gqlhttp.AddTransports(srv, cfg.Server.MaxResponseBytes) }
	cfg.Credentials = gqlhttp.Credentials
	r := graph.NewRig(t, cfg)
	return r.Handler, r
}
