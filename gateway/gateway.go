// Package gateway is paygraph's composition root: it turns a Config into
// the running gateway, building every part below it (the REST client, the
// GraphQL server, observability, the APQ store, GraphiQL, the embedded
// sandbox when no REST API is configured) and wiring them onto one router
// with health and readiness. Nothing below it imports it; the values the
// leaves need (route namers, breaker state, loader names) are handed to
// them here.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/go-chi/chi/v5"
	"github.com/redis/go-redis/v9"

	"paygraph/apqstore"
	"paygraph/gqlhttp"
	"paygraph/graph"
	"paygraph/graphiql"
	"paygraph/observe"
	"paygraph/restclient"
	"paygraph/trusteddocs"
)

// Gateway is the gateway's HTTP surface and what it holds (the embedded
// sandbox, the Redis connections of the APQ store). It is an http.Handler.
type Gateway struct {
	http.Handler
	cfg     Config
	logger  *slog.Logger
	ready   atomic.Bool
	demo    *demo  // the embedded sandbox, in sandbox mode only
	baseURL string // the REST API's {base_url} in use
	closers []io.Closer
	docs    *trusteddocs.Store // the trusted documents, when TRUSTED_DOCUMENTS is set (traffic.go)
}

// Option sets what a Gateway takes besides its Config: runtime
// dependencies, never settings.
type Option func(*options)

type options struct {
	logger        *slog.Logger
	restTransport http.RoundTripper
	tracing       bool
}

// WithLogger sets the logger of the gateway (default: discard).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithRESTTransport replaces the tuned transport to the REST API (tests
// and benchmarks with a stub REST API).
func WithRESTTransport(rt http.RoundTripper) Option {
	return func(o *options) { o.restTransport = rt }
}

// WithTracing turns on the OpenTelemetry server, operation, resolver and
// REST client spans (observe.SetupTracing says whether OTEL_* asks for it).
func WithTracing(on bool) Option { return func(o *options) { o.tracing = on } }

// New builds the gateway for cfg. With no REST_BASE_URL it starts the
// embedded sandbox REST API on a loopback port of its own; Close stops it.
func New(cfg Config, opts ...Option) (*Gateway, error) {
	o := options{logger: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		opt(&o)
	}
	g := &Gateway{cfg: cfg, logger: o.logger, baseURL: cfg.RESTBaseURL}
	if g.baseURL == "" {
		d, err := startDemo(cfg)
		if err != nil {
			return nil, err
		}
		g.demo, g.baseURL = d, d.baseURL
		g.closers = append(g.closers, d)
	}
	if err := g.wire(o); err != nil {
		_ = g.Close()
		return nil, err
	}
	g.ready.Store(true)
	return g, nil
}

// wire builds everything below the gateway and the router in front of it.
func (g *Gateway) wire(o options) error {
	cfg, logger := g.cfg, g.logger
	metrics := observe.NewMetricsWith(callerSecrets)
	rest := o.restTransport
	if rest == nil {
		rest = newTransport(cfg)
	}
	if o.tracing {
		rest = observe.TraceTransport(rest)
	}
	rc, err := restclient.New(restclient.Config{
		BaseURL:      g.baseURL,
		HTTPClient:   &http.Client{Transport: metrics.RESTTransport(rest)},
		StatusParam:  cfg.RESTStatusParam,
		Timeout:      cfg.RESTTimeout,
		MaxBodyBytes: cfg.RESTMaxBody,
		MaxPageBytes: cfg.RESTMaxPage,
		Limiter: restclient.NewLimiter(restclient.LimiterConfig{
			MaxInFlight:            cfg.RESTMaxInFlight,
			MaxInFlightPerMerchant: cfg.RESTMaxInFlightPerMerchant,
		}),
		Resilience: restclient.Resilience{
			MaxRetries:      orDisabled(cfg.RESTMaxRetries),
			BreakerFailures: orDisabled(cfg.BreakerFailures),
			BreakerCooldown: cfg.BreakerCooldown,
			OnBreakerChange: func(from, to string) {
				logger.Warn("REST API circuit breaker", "scope", "process", "from", from, "to", to)
				metrics.SetBreakerState("rest", observe.BreakerStateValue(to))
			},
			// One merchant's circuit: logged, not a metric (its label
			// would be unbounded); the tag is an opaque hash.
			OnMerchantBreakerChange: func(merchant, from, to string) {
				logger.Warn("REST API circuit breaker", "scope", "merchant", "merchant", merchant, "from", from, "to", to)
			},
		},
	})
	if err != nil {
		return err
	}
	if cfg.BreakerFailures > 0 {
		metrics.SetBreakerState("rest", observe.BreakerClosed)
	}
	var apq graphql.Cache[string] // never a typed nil: the handler tests it for nil
	var rdb *redis.Client         // the APQ store's, shared with the rate limits
	if cfg.RedisURL != "" {
		store, err := apqstore.NewRedis(context.Background(), cfg.RedisURL, cfg.APQTTL,
			apqstore.WithLocalSize(cfg.APQCacheSize), apqstore.WithMaxValueBytes(cfg.MaxQueryLength),
			apqstore.WithLogger(logger))
		if err != nil {
			return err
		}
		apq, rdb = store, store.Client()
		g.closers = append(g.closers, store)
	}
	limiter, err := newRateLimiter(cfg, rdb, metrics, logger)
	if err != nil {
		return err
	}
	docs, onDocument, err := newTrustedDocuments(cfg, metrics, logger)
	if err != nil {
		return err
	}
	g.docs = docs
	limits := &graph.FetchLimits{Wait: cfg.LoaderWait, OnBatch: metrics.ObserveBatch}
	extensions := []graphql.HandlerExtension{metrics.GraphQLExtension()}
	if o.tracing {
		extensions = append(extensions, observe.TracingExtensionWith(callerSecrets))
	}
	gql := graph.NewHandler(graph.HandlerConfig{
		REST:            rc,
		FetchLimits:     limits,
		RESTPerRequest:  cfg.RESTMaxConc,
		MaxComplexity:   cfg.MaxComplexity,
		APQCacheSize:    cfg.APQCacheSize,
		APQCache:        apq,
		QueryCacheBytes: cfg.QueryCacheBytes,
		Limits:          graph.QueryLimits{MaxDepth: cfg.MaxDepth, MaxFields: cfg.MaxFields, MaxQueryLength: cfg.MaxQueryLength},
		MaxBodyBytes:    cfg.MaxBodyBytes,
		RequestTimeout:  cfg.RequestTimeout,
		Logger:          logger,
		RequestID:       observe.RequestID,
		Extensions:      extensions,
		OnRefused:       metrics.CountRefused,

		TrustedDocuments:  docs,
		OnTrustedDocument: onDocument,
	})
	r := chi.NewRouter()
	// The credential headers are read first, so that every layer below
	// knows the caller's pair: the access log's line (request id and
	// operation name included) is redacted of it like any other.
	r.Use(graph.Credentials)
	if o.tracing {
		r.Use(observe.TraceHandler)
	}
	r.Use(observe.AccessLogWith(logger, callerSecrets), metrics.InFlight)
	r.Handle("/metrics", metrics.Handler())
	// The rate limit inside CORS (a preflight costs nothing) and outside
	// the handler: a refused request's body is never read. It must run
	// after whatever puts the caller's pair in the context (Credentials
	// above; the session-token middleware, which puts the token's pair
	// there, so a token shares its merchant's budget). To key token
	// requests by sessiontoken's Claims.Merchant instead, hand RateLimit a
	// function that reads the claims first and falls back to MerchantOf.
	rateLimited := gqlhttp.RateLimit(limiter, restclient.MerchantOf, metrics.CountRefused)
	r.Handle("/graphql", graph.NoStore(corsFor(cfg.CORSOrigins)(rateLimited(gql))))
	gq := graphiql.Handler(g.graphiqlOptions())
	r.Handle("/", gq)
	r.Handle("/index.html", gq)
	r.Handle("/graphiql/*", gq)
	r.Get("/healthz", healthz)
	r.Get("/readyz", g.readyz)
	g.Handler = r
	return nil
}

// orDisabled maps our "0 means none" settings onto restclient's "-1
// means none" (where 0 takes the default).
func orDisabled(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// Close releases what the gateway holds besides its handler: the Redis
// connections of the APQ store and the embedded sandbox.
func (g *Gateway) Close() error {
	var errs []error
	for i := len(g.closers) - 1; i >= 0; i-- {
		errs = append(errs, g.closers[i].Close())
	}
	g.closers = nil
	return errors.Join(errs...)
}

// Serve serves on ln until ctx is done, then stops taking new requests
// (readiness answers 503 at once) and lets in-flight ones finish within
// SHUTDOWN_GRACE.
func (g *Gateway) Serve(ctx context.Context, ln net.Listener) error {
	cfg := g.cfg
	srv := &http.Server{
		Handler:           g,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      cfg.RESTTimeout*3 + 30*time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(g.logger.Handler(), slog.LevelWarn),
	}
	g.logger.Info("listening", "addr", ln.Addr().String(), "rest_base_url", redactedURL(g.baseURL),
		"sandbox", g.demo != nil, "apq_store", apqStoreName(cfg))
	defer g.reloadOnSIGHUP()()
	if cfg.PprofAddr != "" {
		stopPprof, err := servePprof(cfg.PprofAddr, g.logger)
		if err != nil {
			return err
		}
		defer stopPprof()
	}

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	g.ready.Store(false)
	g.logger.Info("shutting down", "grace", cfg.ShutdownGrace.String())
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("graceful shutdown: %w", err)
	}
	return nil
}

// ListenAddr is the address the gateway listens on: every interface, on
// PORT.
func (c Config) ListenAddr() string { return fmt.Sprintf(":%d", c.Port) }

func apqStoreName(cfg Config) string {
	if cfg.RedisURL != "" {
		return "redis"
	}
	return "memory"
}
