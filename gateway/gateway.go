// Package gateway is paygraph's composition root: it turns a Config into
// the running gateway, building every part below it (the REST client, the
// GraphQL server, observability, the APQ store, GraphiQL, the embedded
// sandbox when no REST API is configured) and wiring them onto one router
// with health and readiness. Nothing below it imports it; the values the
// leaves need (route namers, breaker state, loader names) are handed to
// them here.
package gateway

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
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
	"paygraph/graph/loaders"
	"paygraph/graph/receipt"
	"paygraph/graphiql"
	"paygraph/internal/opscope"
	"paygraph/livepoll"
	"paygraph/observe"
	"paygraph/restclient"
	"paygraph/sessiontoken"
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
	tokens  bool               // POST /auth/token mints (TOKEN_KEYS, or sandbox mode)
	docs    *trusteddocs.Store // the trusted documents, when TRUSTED_DOCUMENTS is set (traffic.go)
	hub     *livepoll.Hub      // the subscriptions' pollers (subscriptions.go)
	router  *scopedRouter      // Handler, but for batches
	conns   atomic.Pointer[connCap]
	live    atomic.Pointer[liveGauge]
	// held refusals of callers the REST API has not accepted (issue 22),
	// freed at shutdown
	refusals *gqlhttp.RefusalDelay
}

// liveGauge is what gqlhttp hands back to read its live connections
// (gqlhttp.Live.Gauge).
type liveGauge struct {
	open  func() int
	limit int
}

// connections is observe's reading of the client connections held and
// their caps (the paygraph_connections gauges).
func (g *Gateway) connections() map[string]func() (int, int) {
	return map[string]func() (int, int){
		"live": func() (int, int) {
			if l := g.live.Load(); l != nil {
				return l.open(), l.limit
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

// Option sets what a Gateway takes besides its Config: runtime
// dependencies, never settings.
type Option func(*options)

type options struct {
	logger        *slog.Logger
	restTransport http.RoundTripper
	tracing       bool
	clock         func() time.Time
}

// WithLogger sets the logger of the gateway (default: discard).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithRESTTransport replaces the tuned transport to the REST API (tests
// and benchmarks with a stub REST API).
func WithRESTTransport(rt http.RoundTripper) Option {
	return func(o *options) { o.restTransport = rt }
}

// WithClock sets the time source of session tokens, minting and
// verifying (tests: expiry without waiting); default time.Now.
func WithClock(now func() time.Time) Option { return func(o *options) { o.clock = now } }

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
	obs := observeOptions()
	var rc *restclient.Client
	if cfg.BreakerFailures > 0 {
		// Read when /metrics is scraped, from the breaker itself.
		obs.BreakerState = func() float64 { return float64(rc.BreakerState()) }
	}
	obs.Connections = g.connections()
	// The access lines name the merchant by its tag and the caller's
	// address as the per-address budgets read it.
	obs.MerchantTag = restclient.MerchantTag
	obs.ClientAddr = func(r *http.Request) netip.Addr { return gqlhttp.ClientAddr(r, cfg.TrustedProxies) }
	metrics := observe.NewMetrics(obs)
	rest := o.restTransport
	var dropIdle func(context.Context) // the pools' own: one pair's (restclient: every pair's otherwise)
	if rest == nil {
		pools := newTransport(cfg)
		rest, dropIdle = pools, pools.DropIdle
	}
	for _, w := range cfg.Dropped {
		logger.Warn(w)
	}
	if o.tracing {
		rest = observe.TraceTransport(rest, obs)
	}
	var apq graphql.Cache[string] // never a typed nil: the handler tests it for nil
	var rdb *redis.Client         // the APQ store's, shared with the rate limits and the accepted merchants
	redisSkipped, redisErrors := metrics.RedisSkipped(), metrics.RedisErrors()
	if cfg.RedisURL != "" {
		store, err := apqstore.NewRedis(context.Background(), cfg.RedisURL, cfg.APQTTL,
			apqstore.WithLocalSize(cfg.APQCacheSize), apqstore.WithLocalBytes(cfg.APQCacheBytes), apqstore.WithMaxValueBytes(cfg.MaxQueryLength),
			apqstore.WithLogger(logger), apqstore.WithMismatchCounter(func() { redisSkipped("apq", 1) }),
			apqstore.WithErrorCounter(func() { redisErrors("apq") }))
		if err != nil {
			return err
		}
		apq, rdb = store, store.Client()
		g.closers = append(g.closers, store)
	}
	unaccepted := cfg.RESTUnaccepted
	if rdb != nil {
		unaccepted.Store = redisAccepted{rdb: rdb, onErr: func() { redisErrors("accepted") }}
	}
	rc, err := restclient.New(restclient.Config{
		BaseURL:      g.baseURL,
		HTTPClient:   &http.Client{Transport: metrics.RESTTransport(rest)},
		StatusParam:  cfg.RESTStatusParam,
		Timeout:      cfg.RESTTimeout,
		MaxBodyBytes: cfg.RESTMaxBody,
		MaxPageBytes: cfg.RESTMaxPage,
		DropIdle:     dropIdle,
		Limiter: restclient.NewLimiter(restclient.LimiterConfig{
			MaxInFlight:            cfg.RESTMaxInFlight,
			MaxInFlightPerMerchant: cfg.RESTMaxInFlightPerMerchant,
			RequestBurst:           cfg.RESTMaxConcBurst,
			Unaccepted:             unaccepted,
		}),
		Resilience: restclient.Resilience{
			MaxRetries:      cfg.RESTMaxRetries,
			BreakerFailures: cfg.BreakerFailures,
			BreakerCooldown: cfg.BreakerCooldown,
			// The process-wide circuit's metric reads BreakerState
			// (obs.BreakerState); its changes are logged.
			OnBreakerChange: func(from, to restclient.CircuitState) {
				logger.Warn("REST API circuit breaker", "scope", "process", "from", from.String(), "to", to.String())
			},
			// One merchant's circuit: logged, not a metric (its label
			// would be unbounded); the tag is an opaque hash.
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
		// Replicas that share CURSOR_KEYS share their merchants too;
		// rotating the signing key starts the budgets afresh.
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
	anonLimiter, err := newAnonymousLimiter(cfg)
	if err != nil {
		return err
	}
	anonAddrLimiter, err := newAnonymousAddressLimiter(cfg)
	if err != nil {
		return err
	}
	docs, onDocument, err := newTrustedDocuments(cfg, metrics, logger)
	if err != nil {
		return err
	}
	g.docs = docs
	limits := &loaders.FetchLimits{Wait: cfg.LoaderWait, OnBatch: metrics.ObserveBatch}
	extensions := []graphql.HandlerExtension{metrics.GraphQLExtension()}
	if o.tracing {
		extensions = append(extensions, observe.TracingExtension(obs))
	}
	hub, err := g.subscriptionHub(metrics, rdb, merchantKey, redisSkipped, redisErrors)
	if err != nil {
		return err
	}
	gql := graph.NewServer(graph.ServerConfig{
		Subscriptions: graph.Subscriptions{Hub: hub, REST: rc, Charge: chargePolls(limiter),
			Accepted: rc.Accepted, PollTimeout: cmp.Or(cfg.RESTTimeout, restclient.DefaultTimeout)},
		MaxComplexity:     cfg.MaxComplexity,
		CursorKeys:        cfg.CursorKeys,
		MaxResponseBytes:  cfg.MaxResponse,
		APQCacheSize:      cfg.APQCacheSize,
		APQCacheBytes:     cfg.APQCacheBytes,
		APQCache:          apq,
		QueryCacheBytes:   cfg.QueryCacheBytes,
		Limits:            admission.QueryLimits{MaxDepth: cfg.MaxDepth, MaxFields: cfg.MaxFields, MaxQueryLength: cfg.MaxQueryLength},
		Logger:            logger,
		RequestID:         observe.RequestID,
		Extensions:        extensions,
		TrustedDocuments:  docs,
		OnTrustedDocument: onDocument,
		Cost: receipt.CostReceipts{
			Enabled:   cfg.CostReceipts,
			Inspector: g.inspector(),
			OnReceipt: func(_ context.Context, r *receipt.Receipt) { metrics.ObserveRESTCalls(r.Estimated, r.Made) },
		},
	})
	keys := g.tokenKeys(o)
	tokenEndpoint := sessiontoken.NewHandler(tokenOptions(cfg, keys, rc))
	refuse := func(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
		metrics.CountRefused(r.Context(), code)
		gqlhttp.WriteErrorFor(w, r, status, code, msg)
	}
	bearer := gqlhttp.BearerConfig{
		WithScope: func(ctx context.Context, s sessiontoken.Scope) context.Context { return graph.WithScope(ctx, s) },
		KeyHeader: restclient.HeaderAPIKey, SecretHeader: restclient.HeaderAPISecret,
		Refuse: refuse,
	}
	if keys != nil {
		bearer.Verify = keys.Verify
	}
	readBearer, refuseBearer := gqlhttp.Bearer(bearer)
	// The refusals of callers the REST API has not accepted (an anonymous
	// budget's, the bounds on unaccepted pairs') are held for their
	// Retry-After, bounded, so that a closed-loop flood of them costs the
	// replica little CPU.
	g.refusals = gqlhttp.NewRefusalDelay(cfg.RefusalDelayMax, cfg.RefusalDelayMaxHeld, cfg.TrustedProxies)
	// Past its address's share of the held refusals, a refusal closes its
	// connection and the address's new ones wait, closed at accept, as
	// long as a held one would (conns.go).
	g.refusals.OnPastShare(func(peer netip.Addr) {
		if c := g.conns.Load(); c != nil {
			c.penalize(peer, cfg.RefusalDelayMax)
		}
	})
	metrics.HeldRefusals(g.refusals.Held, g.refusals.Delayed)
	// The admission step runs inside CORS (a preflight costs nothing),
	// after the refusals that cost nothing, and before the body is read;
	// after whatever puts the caller's pair in the context (Credentials
	// and the session-token reader at the top of the router), so a token
	// shares its merchant's budget. Who is a merchant is one decision,
	// rc.Merchant: a pair the REST API has accepted; every other request
	// is charged to its address's budget, then the replica's shared one.
	// Each refusal's budget is named on the access line; a request the
	// step answered itself is counted by the metrics here (the GraphQL
	// server's extensions never see it; they count an operation's).
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
		// A WebSocket's connection_init payload is read as the headers
		// of any request are: by the same readers, the same refusals.
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
		// Every operation of a WebSocket is charged to its merchant, or
		// to the shared anonymous budget for a pair not yet accepted, and
		// logged, as a request is.
		Budget:       admission.OperationBudget(),
		OperationLog: observe.OperationLog(logger, obs),
		Now:          o.clock,
		Gauge: func(open func() int, limit int) {
			g.live.Store(&liveGauge{open: open, limit: limit})
		},
	})

	r := chi.NewRouter()
	// The credential headers are read first, so that every layer below
	// knows the caller's pair: the access log's line (request id and
	// operation name included) is redacted of it like any other. A
	// session token (Authorization: Bearer) is read right after, into the
	// same context.
	top := []func(http.Handler) http.Handler{gqlhttp.Credentials, readBearer, gqlhttp.ClientAddress(cfg.TrustedProxies, rc.Accepted)}
	if o.tracing {
		top = append(top, observe.TraceHandler)
	}
	top = append(top, observe.AccessLog(logger, obs), metrics.InFlight)
	r.Use(top...)
	r.Handle("/metrics", metrics.Handler())
	compress, err := gqlhttp.Compress(cfg.CompressMin)
	if err != nil {
		return err
	}
	// The /graphql edge, outermost first: compression and cache headers on
	// every answer (refusals included), CORS, then the refusals (each counted by the
	// metrics: the GraphQL server's extensions never see those requests),
	// cheapest first, before the request's budgets and loaders are made.
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
		graph.CustomerDataMax(cfg.CustomerDataMax),
		graph.LoadersMiddleware(rc, limits),
		// The scope is complete: gqlgen's goroutines only read it.
		opscope.Sealing,
	}
	r.With(edge...).Handle(graphqlPath, gql)
	// The merchant's server trades its pair for a session token; no CORS:
	// a browser never holds the pair.
	r.With(gqlhttp.NoStore, refuseBearer, mintAdmission.Middleware, chargeMint).Handle("/auth/token", tokenEndpoint)
	gq := graphiql.Handler(g.graphiqlOptions())
	r.Handle("/", gq)
	r.Handle("/index.html", gq)
	r.Handle("/graphiql/*", gq)
	r.Get("/healthz", healthz)
	r.Get("/readyz", g.readyz)
	sr := newScopedRouter(r, merchantKey)
	// The same middlewares around the same server, as one chain: what chi
	// runs for POST and GET /graphql, without its routing (scopedRouter).
	sr.graphql = chain(top, chain(edge, gql))
	// A batch's entries each go through all of the above as a request of
	// their own; the batch's answer is compressed as a whole.
	g.router = sr
	g.Handler = gqlhttp.Batches(graphqlPath, cfg.MaxBatch, cfg.MaxBodyBytes, compress, sr)
	return nil
}

// graphqlPath is the GraphQL endpoint's path.
const graphqlPath = "/graphql"

// chain is h inside mws, the first outermost (as chi.Chain makes it).
func chain(mws []func(http.Handler) http.Handler, h http.Handler) http.Handler {
	for i := len(mws) - 1; i >= 0; i-- {
		h = mws[i](h)
	}
	return h
}

// scopedRouter is the router in the request's one scope
// (internal/opscope), the one copy of the request the walk makes: the
// middlewares below fill it in rather than each copying the request for a
// context value of its own. Every credential pair read below is named
// under this deployment's merchant key (restclient/merchant.go), before
// anything reads one.
//
// The scope also holds chi's routing context, taken from a pool as chi
// takes its own: chi's Mux uses a routing context it finds in the request
// (as a subrouter uses its parent's) instead of copying the request once
// more to add one (issue 25: a copy of the request and a context value,
// 2 allocations a request).
//
// POST and GET /graphql, nearly every request a replica serves, skip chi
// altogether: graphql is the router's middlewares and the /graphql
// route's, around the same GraphQL server, as one chain, and it is served
// for exactly the requests chi would route to it (the path as chi reads
// it, r.URL.RawPath or else r.URL.Path, is "/graphql"; chi routes every
// method of a Handle route alike), with the request's Pattern set as chi
// sets it. Nothing below reads chi's routing context, so the request's
// scope holds none then (issue 25: chi's route look-up, its pooled
// context and two look-ups of it in the scope, about 3 % of a single
// payment's CPU in memory). TestGraphQLBypassesChi checks that both ways
// answer alike.
type scopedRouter struct {
	*chi.Mux // the routes (chi.Walk reads them)
	key      *restclient.MerchantKey
	pool     sync.Pool    // of *chi.Context
	graphql  http.Handler // POST and GET /graphql; nil: chi routes them too
}

func newScopedRouter(mux *chi.Mux, key *restclient.MerchantKey) *scopedRouter {
	return &scopedRouter{Mux: mux, key: key, pool: sync.Pool{New: func() any { return chi.NewRouteContext() }}}
}

func (s *scopedRouter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.graphql != nil && (r.Method == http.MethodPost || r.Method == http.MethodGet) &&
		r.URL.RawPath == "" && r.URL.Path == graphqlPath {
		r = r.WithContext(restclient.WithMerchantKey(opscope.New(r.Context()), s.key))
		r.Pattern = graphqlPath // chi's routeHTTP sets it so
		s.graphql.ServeHTTP(w, r)
		return
	}
	rctx := s.pool.Get().(*chi.Context)
	rctx.Reset()
	rctx.Routes = s.Mux
	ctx := restclient.WithMerchantKey(opscope.New(r.Context()), s.key)
	ctx = opscope.WithValue(ctx, chi.RouteCtxKey, rctx)
	s.Mux.ServeHTTP(w, r.WithContext(ctx))
	s.pool.Put(rctx)
}

// inspector reports whether the REST inspector is on: Config.RESTInspector, or
// in sandbox mode when it is auto (demo data, no merchant's calls to hide).
func (g *Gateway) inspector() bool {
	return g.cfg.CostReceipts && (g.cfg.RESTInspector == "true" || g.cfg.RESTInspector == "auto" && g.demo != nil)
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
	return g.ServeProbes(ctx, ln, nil)
}

// ServeProbes is Serve, with /healthz and /readyz also answered on probes
// (HEALTH_PORT; nil: none) until Serve returns.
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
	if probes != nil {
		defer g.serveProbes(probes)()
	}

	served := make(chan error, 1)
	// At shutdown the subscriptions complete at once (a client then
	// subscribes again, to another replica), instead of holding their
	// streams open until SHUTDOWN_GRACE runs out.
	srv.RegisterOnShutdown(g.hub.Close)
	// Held refusals are answered at once: shutdown waits for none of them.
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

// ListenAddr is the address the gateway listens on: HOST (every interface
// when unset) and PORT.
func (c Config) ListenAddr() string { return net.JoinHostPort(c.Host, strconv.Itoa(c.Port)) }

// HealthAddr is the probes' address: HOST and HEALTH_PORT ("" when 0).
func (c Config) HealthAddr() string {
	if c.HealthPort == 0 {
		return ""
	}
	return net.JoinHostPort(c.Host, strconv.Itoa(c.HealthPort))
}

func apqStoreName(cfg Config) string {
	if cfg.RedisURL != "" {
		return "redis"
	}
	return "memory"
}
