// Command paygraph is a GraphQL gateway in front of a merchant's Payment
// Records Read API. With no REST_BASE_URL it starts an embedded sandbox
// REST API with demo data, so `go run .` is enough to explore it.
package main

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/go-chi/chi/v5"
	"github.com/rs/cors"

	"paygraph/apqstore"
	"paygraph/graph"
	"paygraph/graphiql"
	"paygraph/observe"
	"paygraph/restclient"
	"paygraph/sandbox"
)

//go:embed schema.graphqls
var schemaSDL string

func main() {
	cfg, err := loadConfig(os.Getenv, os.Args[1:])
	if errors.Is(err, flagHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "paygraph: bad configuration:", err)
		os.Exit(2)
	}
	if cfg.PrintSchema {
		fmt.Print(schemaSDL)
		return
	}
	if cfg.HealthCheck {
		os.Exit(healthCheck(cfg.Port))
	}
	logger := observe.NewLoggerWith(os.Stderr, cfg.LogFormat, slog.LevelInfo, callerSecrets)
	// Libraries that write with the standard log package (dataloader's
	// panic report, net/http's) go through the same redacting handler.
	slog.SetDefault(logger)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, logger, os.Stdout); err != nil {
		logger.Error("paygraph stopped", "err", err)
		os.Exit(1)
	}
}

// callerSecrets are the request's own credentials, which the logger takes
// out of any line logged in the request's context, whatever their shape.
func callerSecrets(ctx context.Context) []string {
	c, ok := restclient.CredentialsFrom(ctx)
	if !ok {
		return nil
	}
	return []string{c.APIKey, c.APISecret}
}

// run serves until ctx is done, then shuts down gracefully.
func run(ctx context.Context, cfg config, logger *slog.Logger, out io.Writer) error {
	stopTracing, tracing, err := observe.SetupTracing(ctx, "paygraph")
	if err != nil {
		return err
	}
	defer func() {
		fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = stopTracing(fctx)
	}()
	cfg.tracing = tracing
	baseURL, demo := cfg.RESTBaseURL, (*sandbox.Server)(nil)
	if baseURL == "" {
		demo = sandbox.New(sandbox.Options{StatusParam: cfg.RESTStatusParam, Latency: cfg.SandboxLatency})
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
		sb := &http.Server{Handler: demo, ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = sb.Serve(ln) }()
		defer sb.Close()
		baseURL = "http://" + ln.Addr().String()
		b := demo.Businesses()[0]
		cfg.demo = &demoSettings{
			Headers: map[string]string{graph.HeaderAPIKey: b.APIKey, graph.HeaderAPISecret: b.APISecret},
			Query:   graphiqlExample,
		}
	}
	gw, err := newGateway(cfg, baseURL, logger)
	if err != nil {
		return err
	}
	defer gw.Close()
	ln, err := net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(cfg.Port)))
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           gw,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      cfg.RESTTimeout*3 + 30*time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	printBanner(out, ln.Addr(), baseURL, demo)
	logger.Info("listening", "addr", ln.Addr().String(), "rest_base_url", redactedURL(baseURL), "sandbox", demo != nil,
		"tracing", tracing, "apq_store", apqStoreName(cfg))

	if cfg.PprofAddr != "" {
		stopPprof, err := servePprof(cfg.PprofAddr, logger)
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
	gw.ready.Store(false)
	logger.Info("shutting down", "grace", cfg.ShutdownGrace.String())
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("graceful shutdown: %w", err)
	}
	return nil
}

// servePprof serves net/http/pprof on addr, a listener of its own: never
// on the public port, where any caller could read the process's memory
// profile or slow it down with a CPU profile.
func servePprof(addr string, logger *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("PPROF_ADDR: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	logger.Info("pprof listening", "addr", ln.Addr().String())
	return func() { _ = srv.Close() }, nil
}

// healthCheck probes the local /healthz: the container image has no shell
// or curl, so the binary checks itself.
func healthCheck(port int) int {
	c := &http.Client{Timeout: 3 * time.Second}
	resp, err := c.Get("http://127.0.0.1:" + strconv.Itoa(port) + "/healthz")
	if err != nil {
		fmt.Fprintln(os.Stderr, "unhealthy:", err)
		return 1
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintln(os.Stderr, "unhealthy: status", resp.StatusCode)
		return 1
	}
	return 0
}

// redactedURL hides a password in a URL (https://user:pass@host) before
// it is printed.
func redactedURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

func apqStoreName(cfg config) string {
	if cfg.RedisURL != "" {
		return "redis"
	}
	return "memory"
}

// gateway is the HTTP surface of the process.
type gateway struct {
	http.Handler
	ready *atomic.Bool
	apq   io.Closer // the Redis APQ store, if any
}

// Close releases what the gateway holds besides its handler (the Redis
// connections of the APQ store).
func (g *gateway) Close() error {
	if g.apq == nil {
		return nil
	}
	return g.apq.Close()
}

func newGateway(cfg config, baseURL string, logger *slog.Logger) (*gateway, error) {
	metrics := observe.NewMetrics()
	rest := cfg.restTransport
	if rest == nil {
		rest = newTransport(cfg)
	}
	if cfg.tracing {
		rest = observe.TraceTransport(rest)
	}
	rc, err := restclient.New(restclient.Config{
		BaseURL:     baseURL,
		HTTPClient:  &http.Client{Transport: metrics.RESTTransport(rest)},
		StatusParam: cfg.RESTStatusParam,
		Timeout:     cfg.RESTTimeout,
		Resilience: restclient.Resilience{
			MaxRetries:      orDisabled(cfg.RESTMaxRetries),
			BreakerFailures: orDisabled(cfg.BreakerFailures),
			BreakerCooldown: cfg.BreakerCooldown,
			OnBreakerChange: func(from, to string) {
				logger.Warn("REST API circuit breaker", "from", from, "to", to)
				metrics.SetBreakerState("rest", observe.BreakerStateValue(to))
			},
		},
	})
	if err != nil {
		return nil, err
	}
	if cfg.BreakerFailures > 0 {
		metrics.SetBreakerState("rest", observe.BreakerClosed)
	}
	gw := &gateway{ready: new(atomic.Bool)}
	gw.ready.Store(true)
	var apq graphql.Cache[string] // never a typed nil: the handler tests it for nil
	if cfg.RedisURL != "" {
		store, err := apqstore.NewRedis(context.Background(), cfg.RedisURL, cfg.APQTTL,
			apqstore.WithLocalSize(cfg.APQCacheSize), apqstore.WithMaxValueBytes(cfg.MaxQueryLength),
			apqstore.WithLogger(logger))
		if err != nil {
			return nil, err
		}
		apq, gw.apq = store, store
	}
	if cfg.CursorKeys == nil && cfg.RESTBaseURL != "" {
		logger.Warn("CURSOR_KEYS is unset: pagination cursors are signed with a random key and work only on this process " +
			"(a restart or another replica refuses them); give every replica the same CURSOR_KEYS")
	}
	limits := graph.NewFetchLimits(cfg.RESTMaxConc, cfg.RESTMaxInFlight, cfg.LoaderWait)
	limits.OnBatch = metrics.ObserveBatch
	extensions := []graphql.HandlerExtension{metrics.GraphQLExtension()}
	if cfg.tracing {
		extensions = append(extensions, observe.TracingExtension())
	}
	gql := graph.NewHandler(graph.HandlerConfig{
		REST:             rc,
		FetchLimits:      limits,
		CursorKeys:       cfg.CursorKeys,
		MaxComplexity:    cfg.MaxComplexity,
		APQCacheSize:     cfg.APQCacheSize,
		APQCache:         apq,
		Limits:           graph.QueryLimits{MaxDepth: cfg.MaxDepth, MaxFields: cfg.MaxFields, MaxQueryLength: cfg.MaxQueryLength},
		MaxBodyBytes:     cfg.MaxBodyBytes,
		MaxResponseBytes: cfg.MaxResponse,
		RequestTimeout:   cfg.RequestTimeout,
		Logger:           logger,
		RequestID:        observe.RequestID,
		Extensions:       extensions,
		OnRefused:        metrics.CountRefused,
	})
	r := chi.NewRouter()
	if cfg.tracing {
		r.Use(observe.TraceHandler)
	}
	r.Use(observe.AccessLog(logger), metrics.InFlight)
	r.Handle("/metrics", metrics.Handler())
	r.Handle("/graphql", corsFor(cfg.CORSOrigins)(gql))
	gq := graphiql.Handler(graphiqlOptions(cfg.demo))
	r.Handle("/", gq)
	r.Handle("/index.html", gq)
	r.Handle("/graphiql/*", gq)
	r.Get("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	r.Get("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !gw.ready.Load() {
			http.Error(w, "shutting down", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ready\n")
	})
	gw.Handler = r
	return gw, nil
}

// orDisabled maps our "0 means none" settings onto restclient's "-1
// means none" (where 0 takes the default).
func orDisabled(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// corsFor lets the merchant's own frontends (and only them) call /graphql
// from a browser with the two credential headers. With no origins
// configured, browsers elsewhere are refused, so a page on another site
// cannot spend a victim's credentials.
func corsFor(origins []string) func(http.Handler) http.Handler {
	allowed := make(map[string]bool, len(origins))
	for _, o := range origins {
		allowed[o] = true
	}
	allow := func(origin string) bool { return allowed["*"] || allowed[origin] }
	c := cors.New(cors.Options{
		// rs/cors reads an empty AllowedOrigins as "*": decide ourselves.
		AllowOriginFunc: allow,
		AllowedMethods:  []string{http.MethodGet, http.MethodPost},
		AllowedHeaders: []string{"Content-Type", "Accept", graph.HeaderAPIKey, graph.HeaderAPISecret,
			"X-Request-Id", "traceparent", "tracestate", "apollo-require-preflight"},
		ExposedHeaders: []string{"X-Request-Id"},
		MaxAge:         600,
	})
	return func(next http.Handler) http.Handler {
		// A browser on a foreign origin that skips the preflight (a
		// simple GET) still must not reach the REST API with our caller's
		// credentials: refuse it outright. Same-origin pages (GraphiQL)
		// and non-browser clients, which send no Origin, pass.
		guard := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if o := r.Header.Get("Origin"); o != "" && !allow(o) && !sameOrigin(o, r) {
				http.Error(w, "origin not allowed", http.StatusForbidden)
				return
			}
			next.ServeHTTP(w, r)
		})
		return c.Handler(guard)
	}
}

func sameOrigin(origin string, r *http.Request) bool {
	u, err := url.Parse(origin)
	return err == nil && u.Host == r.Host
}

// newTransport sizes the keep-alive pool for the concurrency bounds, so
// that steady load reuses connections instead of dialling.
func newTransport(cfg config) *http.Transport {
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          cfg.RESTMaxInFlight,
		MaxIdleConnsPerHost:   cfg.RESTMaxInFlight,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   5 * time.Second,
		ResponseHeaderTimeout: cfg.RESTTimeout,
		ExpectContinueTimeout: time.Second,
	}
}

func graphiqlOptions(demo *demoSettings) graphiql.Options {
	opts := graphiql.Options{Endpoint: "/graphql", Title: "paygraph"}
	if demo != nil {
		opts.Headers, opts.DefaultQuery = demo.Headers, demo.Query
	}
	return opts
}

const graphiqlExample = `# Demo data from the embedded sandbox: press Run.
{
  payments(first: 5) {
    edges {
      cursor
      node {
        id
        status
        amount { amount paisa currency }
        customer { name address }
        createdAt
      }
    }
    pageInfo { hasNextPage endCursor }
  }
}
`

const exampleQuery = `{ payments(first: 3) { edges { cursor node { id amount { amount paisa } customer { name address } } } pageInfo { hasNextPage endCursor } } }`

func printBanner(out io.Writer, addr net.Addr, baseURL string, demo *sandbox.Server) {
	port := "8080"
	if ta, ok := addr.(*net.TCPAddr); ok {
		port = strconv.Itoa(ta.Port)
	}
	url := "http://localhost:" + port
	fmt.Fprintf(out, "paygraph is listening on %s (GraphiQL at %s/, GraphQL at %s/graphql)\n", url, url, url)
	if demo == nil {
		fmt.Fprintf(out, "REST API: %s\n", redactedURL(baseURL))
		return
	}
	fmt.Fprintf(out, "REST API: embedded sandbox with demo data at %s\n\nDemo credentials:\n", baseURL)
	for _, b := range demo.Businesses() {
		fmt.Fprintf(out, "  %-20s x-api-key: %s  x-api-secret: %s\n", b.Name, b.APIKey, b.APISecret)
	}
	b := demo.Businesses()[0]
	fmt.Fprintf(out, "\nTry it:\n  curl -s %s/graphql -H 'content-type: application/json' \\\n    -H 'x-api-key: %s' -H 'x-api-secret: %s' \\\n    -d '{\"query\":\"%s\"}'\n",
		url, b.APIKey, b.APISecret, exampleQuery)
}
