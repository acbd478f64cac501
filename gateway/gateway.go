// Package gateway is paygraph's composition root: it turns a Config into the
// running gateway, building every part below it (the REST client, the GraphQL
// server, observability, the APQ store, GraphiQL, the embedded sandbox when no
// REST API is configured) and wiring them onto one router. Nothing below it
// imports it.
package gateway

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/go-chi/chi/v5"
	"github.com/redis/go-redis/v9"

	"paygraph/apqstore"
	"paygraph/gqlhttp"
	"paygraph/graph"
	"paygraph/graph/admission"
	"paygraph/graph/customerdata"
	"paygraph/graph/live"
	"paygraph/graph/loaders"
	"paygraph/graph/receipt"
	"paygraph/graphiql"
	"paygraph/internal/growstack"
	"paygraph/internal/opscope"
	"paygraph/livepoll"
	"paygraph/observe"
	"paygraph/restclient"
	"paygraph/sandbox"
	"paygraph/sessiontoken"
	"paygraph/trusteddocs"
)

// Gateway is the gateway's HTTP handler and what it holds (the embedded
// sandbox, the APQ store's Redis).
type Gateway struct {
	http.Handler
	cfg      Config
	logger   *slog.Logger
	ready    atomic.Bool
	demo     *sandbox.Server // the embedded sandbox, in sandbox mode only
	baseURL  string          // the REST API's {base_url} in use
	closers  []func() error
	tokens   bool               // POST /auth/token mints (TOKEN_KEYS, or sandbox mode)
	docs     *trusteddocs.Store // the trusted documents, when TRUSTED_DOCUMENTS is set (traffic.go)
	hub      *livepoll.Hub      // the subscriptions' pollers (subscriptions.go)
	router   *scopedRouter      // Handler, but for batches
	conns    atomic.Pointer[connCap]
	live     atomic.Pointer[func() (open, limit int)] // gqlhttp.Live.Gauge's
	refusals *gqlhttp.RefusalDelay                    // freed at shutdown
}

// connections reads the connections held and their caps, by kind.
func (g *Gateway) connections() map[string]func() (int, int) {
	return map[string]func() (int, int){
		"live": func() (int, int) {
			if read := g.live.Load(); read != nil {
				return (*read)()
			}
			return 0, 0
		},
		"http": func() (int, int) {
			if c := g.conns.Load(); c != nil {
				return c.count(), c.max
			}
			return 0, newConnCap(nil, g.cfg.HTTPMaxConnections, nil).max
		},
	}
}

// Option sets a runtime dependency of a Gateway, never a setting.
type Option func(*options)

type options struct {
	logger        *slog.Logger
	restTransport http.RoundTripper
	tracing       bool
	clock         func() time.Time
}

// WithLogger sets the logger (default: discard); WithTracing turns on the
// spans (observe.SetupTracing).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }
func WithTracing(on bool) Option       { return func(o *options) { o.tracing = on } }

// New builds the gateway for cfg; with no REST_BASE_URL it starts the embedded
// sandbox (Close stops it).
func New(cfg Config, opts ...Option) (*Gateway, error) {
	o := options{logger: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		opt(&o)
	}
	g := &Gateway{cfg: cfg, logger: o.logger, baseURL: cfg.RESTBaseURL}
	if g.baseURL == "" {
		if err := g.startDemo(); err != nil {
			return nil, err
		}
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
	obs := observeOptions()
	var rc *restclient.Client
	if cfg.BreakerFailures > 0 {
		// Read when /metrics is scraped, from the breaker itself.
		obs.BreakerState = func() float64 { return float64(rc.BreakerState()) }
	}
	obs.Connections = g.connections()
	obs.MerchantTag = restclient.MerchantTag
	obs.ClientAddr = func(r *http.Request) netip.Addr { return gqlhttp.ClientAddr(r, cfg.TrustedProxies) }
	metrics := observe.NewMetrics(obs)
	rest := o.restTransport
	var dropIdle func(context.Context) // the pools' own
	if rest == nil {
		pools := newTransport(cfg)
		rest, dropIdle = pools, pools.DropIdle
	}
	for _, w := range cfg.Dropped {
		logger.Warn(w)
	}
	extensions := []graphql.HandlerExtension{metrics.GraphQLExtension()}
	if o.tracing {
		rest = observe.TraceTransport(rest, obs)
		extensions = append(extensions, observe.TracingExtension(obs))
	}
	var apq graphql.Cache[string] // never a typed nil: the handler tests it for nil
	var rdb *redis.Client         // the APQ store's, shared with the rate limits and the accepted merchants
	redisSkipped, redisErrors := metrics.RedisSkipped(), metrics.RedisErrors()
	if cfg.RedisURL != "" {
		// A day: a client registers a query again at its next miss, and old
		// deployments' queries go.
		store, err := apqstore.NewRedis(context.Background(), cfg.RedisURL, 24*time.Hour,
			apqstore.WithLocalSize(graph.DefaultAPQCacheSize), apqstore.WithLocalBytes(cfg.APQCacheBytes), apqstore.WithMaxValueBytes(cfg.MaxQueryLength),
			apqstore.WithLogger(logger), apqstore.WithMismatchCounter(func() { redisSkipped("apq", 1) }),
			apqstore.WithErrorCounter(func() { redisErrors("apq") }))
		if err != nil {
			return err
		}
		apq, rdb = store, store.Client()
		g.closers = append(g.closers, store.Close)
	}
	unaccepted := cfg.RESTUnaccepted
	if rdb != nil {
		unaccepted.Store = redisAccepted{rdb: rdb, onErr: func() { redisErrors("accepted") }}
	}
	// REST_SHARE_CALLS: as many operations as the pair's calls in flight may
	// wait for one; else none.
	shareWaiters := -1
	if cfg.RESTShareCalls {
		shareWaiters = cmp.Or(cfg.RESTMaxInFlightPerMerchant, restclient.DefaultShareWaiters)
	}
	rc, err := restclient.New(restclient.Config{
		BaseURL:      g.baseURL,
		HTTPClient:   &http.Client{Transport: metrics.RESTTransport(rest)},
		StatusParam:  cfg.RESTStatusParam,
		Timeout:      cfg.RESTTimeout,
		MaxBodyBytes: cfg.RESTMaxBody,
		MaxPageBytes: cfg.RESTMaxPage,
		DropIdle:     dropIdle,
		ShareWaiters: shareWaiters,
		Limiter: restclient.NewLimiter(restclient.LimiterConfig{
			MaxInFlight:            cfg.RESTMaxInFlight,
			MaxInFlightPerMerchant: cfg.RESTMaxInFlightPerMerchant,
			Unaccepted:             unaccepted,
		}),
		Resilience: restclient.Resilience{
			MaxRetries:      cfg.RESTMaxRetries,
			BreakerFailures: cfg.BreakerFailures,
			BreakerCooldown: cfg.BreakerCooldown,
			OnBreakerChange: func(from, to restclient.CircuitState) {
				logger.Warn("REST API circuit breaker", "scope", "process", "from", from.String(), "to", to.String())
			},
			// Not a metric: its label would be unbounded.
			OnMerchantBreakerChange: func(merchant string, from, to restclient.CircuitState) {
				logger.Warn("REST API circuit breaker", "scope", "merchant", "merchant", merchant, "from", from.String(), "to", to.String())
			},
		},
	})
	if err != nil {
		return err
	}
	if cfg.CursorKeys == nil && cfg.RESTBaseURL != "" {
		logger.Warn("CURSOR_KEYS is unset: pagination cursors are signed with a random key and work only on this process " +
			"(a restart or another replica refuses them); give every replica the same CURSOR_KEYS")
	}
	merchantKey := cfg.MerchantKey
	if merchantKey == nil && cfg.CursorKeys != nil {
		merchantKey, err = restclient.NewMerchantKey(cfg.CursorKeys.Derive("paygraph merchant id key v1"))
		if err != nil {
			return err
		}
	}
	if merchantKey == nil {
		merchantKey = restclient.RandomMerchantKey()
		if cfg.RedisURL != "" {
			logger.Warn("MERCHANT_ID_KEY and CURSOR_KEYS are unset: merchants are named by a random key per process, so the rate-limit budgets " +
				"and accepted merchants in Redis are not shared between replicas (nor kept across a restart); give every replica the same MERCHANT_ID_KEY")
		}
	}
	limiter, err := newRateLimiter(cfg, rdb, metrics, logger, redisSkipped)
	if err != nil {
		return err
	}
	anonLimiter, err := newAnonymousLimiter(cfg.RateLimitAnonymousPerSecond, cfg.RateLimitAnonymousBurst)
	if err != nil {
		return err
	}
	anonAddrLimiter, err := newAnonymousLimiter(cfg.RateLimitAnonymousPerAddressPerSecond, cfg.RateLimitAnonymousPerAddressBurst)
	if err != nil {
		return err
	}
	docs, onDocument, err := newTrustedDocuments(cfg, metrics, logger)
	if err != nil {
		return err
	}
	g.docs = docs
	hub, err := g.subscriptionHub(metrics, rdb, merchantKey, redisSkipped, redisErrors)
	if err != nil {
		return err
	}
	gql := graph.NewServer(graph.ServerConfig{
		Subscriptions: live.Config{Hub: hub, REST: rc, Charge: chargePolls(limiter),
			Accepted: rc.Accepted, PollTimeout: cmp.Or(cfg.RESTTimeout, restclient.DefaultTimeout)},
		Limits:            admission.QueryLimits{MaxDepth: cfg.MaxDepth, MaxFields: cfg.MaxFields, MaxQueryLength: cfg.MaxQueryLength},
		MaxComplexity:     cfg.MaxComplexity,
		Federation:        cfg.Federation,
		CursorKeys:        cfg.CursorKeys,
		MaxResponseBytes:  cfg.MaxResponse,
		APQCacheBytes:     cfg.APQCacheBytes,
		APQCache:          apq,
		QueryCacheBytes:   cfg.QueryCacheBytes,
		Logger:            logger,
		RequestID:         observe.RequestID,
		Extensions:        extensions,
		TrustedDocuments:  docs,
		OnTrustedDocument: onDocument,
		Cost: receipt.CostReceipts{
			Enabled: cfg.CostReceipts,
			// On in sandbox mode only: demo data, no merchant's calls to hide.
			Inspector: cfg.CostReceipts && g.demo != nil,
			OnReceipt: func(_ context.Context, r *receipt.Receipt) { metrics.ObserveRESTCalls(r.Estimated, r.Made) },
		},
	})
	keys := g.tokenKeys(o)
	tokenEndpoint := sessiontoken.NewHandler(tokenOptions(cfg, keys, rc))
	bearer := gqlhttp.BearerConfig{
		WithScope: func(ctx context.Context, s sessiontoken.Scope) context.Context { return graph.WithScope(ctx, s) },
		KeyHeader: restclient.HeaderAPIKey, SecretHeader: restclient.HeaderAPISecret,
		Refuse: func(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
			metrics.CountRefused(r.Context(), code)
			gqlhttp.WriteErrorFor(w, r, status, code, msg)
		},
	}
	if keys != nil {
		bearer.Verify = keys.Verify
	}
	readBearer, refuseBearer := gqlhttp.Bearer(bearer)
	// Refusals of callers not yet accepted are held (bounded) for their
	// Retry-After: floods cost little.
	g.refusals = gqlhttp.NewRefusalDelay(cfg.RefusalDelayMax, cfg.RefusalDelayMaxHeld, cfg.TrustedProxies)
	// An address past its share of the held refusals is banned a while.
	g.refusals.OnPastShare(func(peer netip.Addr) {
		if c := g.conns.Load(); c != nil {
			c.penalize(peer, cfg.RefusalDelayMax)
		}
	})
	metrics.HeldRefusals(g.refusals.Held, g.refusals.Delayed)
	// A request admission answered is counted here: gqlgen never sees it.
	refused := func(ctx context.Context, r gqlhttp.Refusal) {
		if r.Answered {
			metrics.CountRefused(ctx, r.Code)
		}
		observe.StatsFrom(ctx).NoteRefusedBy(r.Budget)
	}
	admission := gqlhttp.NewAdmission(gqlhttp.AdmissionConfig{
		Merchants: limiter, AnonymousAddress: anonAddrLimiter, Anonymous: anonLimiter,
		TrustedProxies: cfg.TrustedProxies, Merchant: rc.Merchant, Admit: rc.Admit,
		Delay: g.refusals, OnRefused: refused,
	})
	// POST /auth/token is charged to its merchant's budget alone.
	mintAdmission := gqlhttp.NewAdmission(gqlhttp.AdmissionConfig{Merchants: limiter, Merchant: rc.Merchant, OnRefused: refused})
	gqlhttp.AddTransports(gql, cfg.MaxResponse, gqlhttp.Live{
		Readers: func(h http.Handler) http.Handler {
			return gqlhttp.Credentials(readBearer(gqlhttp.SingleCredentials(refuseBearer(h))))
		},
		OriginPatterns:  originPatterns(cfg.CORSOrigins),
		MaxConnections:  cfg.LiveMaxConnections,
		MaxLifetime:     cfg.LiveMaxLifetime,
		MaxOperations:   cfg.LiveMaxOperations,
		InitTimeout:     cfg.LiveInitTimeout,
		WriteTimeout:    cfg.LiveWriteTimeout,
		MaxMessageBytes: cfg.MaxBodyBytes,
		RequestTimeout:  cfg.RequestTimeout,
		RESTCalls:       cfg.RESTMaxConc,
		Budget:          admission.OperationBudget(),
		OperationLog:    observe.OperationLog(logger, obs),
		Now:             o.clock,
		Gauge: func(open func() int, limit int) {
			read := func() (int, int) { return open(), limit }
			g.live.Store(&read)
		},
	})

	r := chi.NewRouter()
	// The credentials are read first: the layers below know the caller's pair,
	// the access log redacts it.
	top := []func(http.Handler) http.Handler{gqlhttp.Credentials, readBearer, gqlhttp.ClientAddress(cfg.TrustedProxies, rc.Accepted)}
	if o.tracing {
		top = append(top, observe.TraceHandler)
	}
	top = append(top, observe.AccessLog(logger, obs), metrics.InFlight)
	r.Use(top...)
	r.Handle("/metrics", metrics.Handler())
	compress, err := gqlhttp.Compress(1024) // smaller answers gain less than compressing costs
	if err != nil {
		return err
	}
	// The /graphql edge, outermost first: compression and cache headers on
	// every answer (refusals included), CORS, then the refusals, cheapest
	// first, before the budgets and loaders are made.
	edge := []func(http.Handler) http.Handler{
		compress,
		gqlhttp.NoStore,
		corsFor(cfg.CORSOrigins),
		gqlhttp.OnRefused(metrics.CountRefused),
		gqlhttp.SingleCredentials,
		refuseBearer,
		admission.Middleware,
		gqlhttp.RequestSize(cfg.MaxBodyBytes),
		gqlhttp.Methods,
		gqlhttp.Deadline(cfg.RequestTimeout, cfg.RESTMaxConc),
		customerdata.Max(cfg.CustomerDataMax),
		graph.LoadersMiddleware(rc, &loaders.FetchLimits{OnBatch: metrics.ObserveBatch}),
		// The scope is complete: gqlgen's goroutines only read it.
		opscope.Sealing,
	}
	r.With(edge...).Handle(graphqlPath, gql)
	// No CORS: a browser never holds the pair.
	r.With(gqlhttp.NoStore, refuseBearer, mintAdmission.Middleware, chargeMint).Handle("/auth/token", tokenEndpoint)
	g.mountMCP(r, keys, admission.Middleware)
	gq := graphiql.Handler(g.graphiqlOptions())
	r.Handle("/", gq)
	r.Handle("/index.html", gq)
	r.Handle("/graphiql/*", gq)
	r.Get("/healthz", healthz)
	r.Get("/readyz", g.readyz)
	g.router = newScopedRouter(r, merchantKey)
	// Each entry of a batch goes through all of the above as a request.
	g.Handler = gqlhttp.Batches(graphqlPath, cfg.MaxBatch, cfg.MaxBodyBytes, compress, g.router)
	return nil
}

const graphqlPath = "/graphql"

// scopedRouter serves each request in its one scope (internal/opscope), its
// pairs named under the merchant key, with chi's routing context from a pool
// in it: chi does not copy the request again.
type scopedRouter struct {
	*chi.Mux // the routes (chi.Walk reads them)
	key      *restclient.MerchantKey
	pool     sync.Pool // of *chi.Context
}

func newScopedRouter(mux *chi.Mux, key *restclient.MerchantKey) *scopedRouter {
	return &scopedRouter{Mux: mux, key: key, pool: sync.Pool{New: func() any { return chi.NewRouteContext() }}}
}

func (s *scopedRouter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	growstack.Request()
	rctx := s.pool.Get().(*chi.Context)
	rctx.Reset()
	rctx.Routes = s.Mux
	ctx := restclient.WithMerchantKey(opscope.New(r.Context()), s.key)
	ctx = opscope.WithValue(ctx, chi.RouteCtxKey, rctx)
	s.Mux.ServeHTTP(w, r.WithContext(ctx))
	s.pool.Put(rctx)
}

// Close releases what the gateway holds besides its handler.
func (g *Gateway) Close() error {
	var errs []error
	for i := len(g.closers) - 1; i >= 0; i-- {
		errs = append(errs, g.closers[i]())
	}
	g.closers = nil
	return errors.Join(errs...)
}

// ServeProbes serves on ln until ctx is done, then answers readiness 503 and
// lets in-flight requests finish within SHUTDOWN_GRACE; it also answers
// /healthz and /readyz on probes (HEALTH_PORT; nil: none).
func (g *Gateway) ServeProbes(ctx context.Context, ln, probes net.Listener) error {
	cfg := g.cfg
	conns := newConnCap(ln, cfg.HTTPMaxConnections, cfg.TrustedProxies)
	g.conns.Store(conns)
	srv := &http.Server{
		Handler:           conns.serve(g),
		ConnState:         conns.track,
		ConnContext:       connContext,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       120 * time.Second,
		WriteTimeout:      cfg.RESTTimeout*3 + 30*time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(g.logger.Handler(), slog.LevelWarn),
	}
	apqStore := "memory"
	if cfg.RedisURL != "" {
		apqStore = "redis"
	}
	g.logger.Info("listening", "addr", ln.Addr().String(), "rest_base_url", redactedURL(g.baseURL),
		"sandbox", g.demo != nil, "apq_store", apqStore)
	defer g.reloadOnSIGHUP()()
	if cfg.PprofAddr != "" {
		stopPprof, err := servePprof(cfg.PprofAddr, g.logger)
		if err != nil {
			return err
		}
		defer stopPprof()
	}
	if probes != nil {
		defer g.serveProbes(probes)()
	}

	served := make(chan error, 1)
	// At shutdown subscriptions complete (clients subscribe elsewhere), held
	// refusals are answered at once.
	srv.RegisterOnShutdown(g.hub.Close)
	srv.RegisterOnShutdown(g.refusals.Close)
	go func() { served <- srv.Serve(conns) }()
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

// ListenAddr is HOST and PORT.
func (c Config) ListenAddr() string { return net.JoinHostPort(c.Host, strconv.Itoa(c.Port)) }

// HealthAddr is the probes' address: HOST and HEALTH_PORT ("" when 0).
func (c Config) HealthAddr() string {
	if c.HealthPort == 0 {
		return ""
	}
	return net.JoinHostPort(c.Host, strconv.Itoa(c.HealthPort))
}
