package gqlhttp_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"paygraph/gqlhttp"
	"paygraph/graph"
	"paygraph/restclient"
	"paygraph/sandbox"
)

// edgeConfig is what a test sets of the edge it builds; zero fields take
// the gateway's defaults.
type edgeConfig struct {
	maxBody   int64         // RequestSize; 0: 256 KiB
	timeout   time.Duration // Deadline
	restCalls int           // Deadline
	logger    *slog.Logger
	onRefused func(ctx context.Context, code string)
	server    graph.ServerConfig
}

// newEdge is the /graphql route as the gateway composes it (gateway.go),
// CORS and the access log aside: Credentials at the top, then the edge's
// middlewares, the loaders and the GraphQL server with the edge's
// transports.
func newEdge(rest graph.REST, cfg edgeConfig) http.Handler {
	if cfg.maxBody == 0 {
		cfg.maxBody = 256 << 10
	}
	if cfg.logger != nil {
		cfg.server.Logger = cfg.logger
	}
	srv := graph.NewServer(cfg.server)
	gqlhttp.AddTransports(srv, 0)
	chain := []func(http.Handler) http.Handler{
		gqlhttp.Credentials,
		gqlhttp.NoStore,
		gqlhttp.OnRefused(cfg.onRefused),
		gqlhttp.SingleCredentials,
		gqlhttp.RequestSize(cfg.maxBody),
		gqlhttp.Methods,
		gqlhttp.Deadline(cfg.timeout, cfg.restCalls),
		graph.LoadersMiddleware(rest, nil),
	}
	var h http.Handler = srv
	for i := len(chain) - 1; i >= 0; i-- { // the first is outermost
		h = chain[i](h)
	}
	return h
}

// sandboxREST is the embedded sandbox and a REST client that calls it in
// process (at most maxInFlight calls at once).
func sandboxREST(tb testing.TB, maxInFlight int) (*sandbox.Server, *restclient.Client) {
	tb.Helper()
	sb := sandbox.New(sandbox.Options{})
	rc, err := restclient.New(restclient.Config{BaseURL: "http://sandbox.invalid", HTTPClient: &http.Client{Transport: inProcess{sb}},
		Limiter: restclient.NewLimiter(restclient.LimiterConfig{MaxInFlight: maxInFlight})})
	if err != nil {
		tb.Fatal(err)
	}
	return sb, rc
}

// inProcess serves HTTP requests from a handler without a network, so
// that a fuzz execution costs microseconds.
type inProcess struct{ h http.Handler }

func (t inProcess) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}

// noREST is a REST for queries that make no REST call (any call panics).
type noREST struct{ graph.REST }
