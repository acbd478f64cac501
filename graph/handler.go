package graph

import (
	"net/http"

	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/ast"

	"paygraph/graph/model"
	"paygraph/restclient"
)

// The credential headers forwarded, unchanged, to the REST API.
const (
	HeaderAPIKey    = "x-api-key"
	HeaderAPISecret = "x-api-secret"
)

// HandlerConfig configures the /graphql handler.
type HandlerConfig struct {
	REST           REST
	Limits         *FetchLimits
	MaxComplexity  int // refuse operations whose estimated REST fan-out is larger
	APQCacheSize   int // automatic persisted queries kept in memory
	QueryCacheSize int // parsed and validated documents kept in memory
}

func (c *HandlerConfig) defaults() {
	if c.Limits == nil {
		c.Limits = NewFetchLimits(16, 256, 0)
	}
	if c.MaxComplexity <= 0 {
		c.MaxComplexity = 5000
	}
	if c.APQCacheSize <= 0 {
		c.APQCacheSize = 1000
	}
	if c.QueryCacheSize <= 0 {
		c.QueryCacheSize = 1000
	}
}

// NewHandler returns the /graphql HTTP handler: POST and GET transports,
// APQ, the parsed-query cache, the complexity limit, the error presenter,
// and the middleware that takes the caller's credentials and creates the
// request's loaders.
func NewHandler(cfg HandlerConfig) http.Handler {
	cfg.defaults()
	es := NewExecutableSchema(Config{
		Resolvers:  &Resolver{REST: cfg.REST, Limits: cfg.Limits},
		Complexity: complexityRoot(),
	})
	srv := handler.New(es)
	srv.AddTransport(transport.Options{})
	srv.AddTransport(transport.GET{})
	srv.AddTransport(transport.POST{})
	srv.SetQueryCache(lru.New[*ast.QueryDocument](cfg.QueryCacheSize))
	srv.Use(extension.Introspection{})
	srv.Use(extension.AutomaticPersistedQuery{Cache: lru.New[string](cfg.APQCacheSize)})
	srv.Use(extension.FixedComplexityLimit(cfg.MaxComplexity))
	srv.SetErrorPresenter(ErrorPresenter)
	return CredentialsMiddleware(LoadersMiddleware(cfg.REST, cfg.Limits)(srv))
}

// CredentialsMiddleware puts the caller's x-api-key and x-api-secret into
// the request context, where the REST client takes them from. When either
// is missing nothing is put there, and every REST-backed field answers
// UNAUTHENTICATED without a call; introspection still works.
func CredentialsMiddleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, secret := r.Header.Get(HeaderAPIKey), r.Header.Get(HeaderAPISecret)
		if key != "" && secret != "" {
			r = r.WithContext(restclient.WithCredentials(r.Context(), restclient.Credentials{APIKey: key, APISecret: secret}))
		}
		next.ServeHTTP(w, r)
	})
}

// complexityRoot estimates REST fan-out: payments(first: n) costs n times
// its selection, nodes(ids) the number of ids times its selection.
func complexityRoot() ComplexityRoot {
	var c ComplexityRoot
	c.Query.Payments = func(child int, first *int, _ *string, _ *model.PaymentStatus) int {
		n := defaultFirst
		if first != nil {
			// Out-of-range values are refused by the resolver with
			// BAD_USER_INPUT; clamp so that the error says so.
			n = min(max(*first, 0), maxFirst)
		}
		return 1 + n*max(child, 1)
	}
	c.Query.Nodes = func(child int, ids []string) int {
		return 1 + min(len(ids), MaxNodes)*max(child, 1)
	}
	return c
}
