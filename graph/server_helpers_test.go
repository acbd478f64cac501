package graph_test

import (
	"net/http"

	"paygraph/gqlhttp"
	"paygraph/graph"
)

// serveGraphQL is the /graphql route as the gateway composes it, around
// the server cfg configures, in front of rest: the edge's transports, the
// caller's credential headers and the request's loaders.
func serveGraphQL(rest graph.REST, cfg graph.ServerConfig) http.Handler {
	srv := graph.NewServer(cfg)
	gqlhttp.AddTransports(srv, cfg.MaxResponseBytes)
	return gqlhttp.Credentials(graph.LoadersMiddleware(rest, nil)(srv))
}
