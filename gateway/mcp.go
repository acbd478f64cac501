package gateway

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"paygraph/gqlhttp"
	"paygraph/graph"
	"paygraph/mcpserver"
	"paygraph/restclient"
	"paygraph/sessiontoken"
)

// mountMCP serves /mcp; its tool calls go through g.router (set once wire
// returns) as POSTs to /graphql.
func (g *Gateway) mountMCP(r chi.Router, keys *sessiontoken.Keyring, admit func(http.Handler) http.Handler) {
	if g.cfg.MCP == "off" {
		return
	}
	cfg := mcpserver.Config{
		Admit:       admit,
		Arbitrary:   g.cfg.MCP == "graphql",
		GraphQL:     http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { g.router.ServeHTTP(w, r) }),
		GraphQLPath: graphqlPath,
		Schema:      graph.NewExecutableSchema(graph.Config{}).Schema(),
		Documents:   g.docs,
		KeyHeader:   restclient.HeaderAPIKey, SecretHeader: restclient.HeaderAPISecret,
		Logger: g.logger,
	}
	if keys != nil {
		cfg.Verify = keys.Verify
	}
	endpoint, metadata := mcpserver.New(cfg)
	r.With(gqlhttp.NoStore, gqlhttp.RequestSize(g.cfg.MaxBodyBytes)).Handle(mcpserver.Path, endpoint)
	r.Get(mcpserver.MetadataPath, metadata.ServeHTTP)
}
