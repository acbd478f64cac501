package gateway_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"paygraph/gateway"
	"paygraph/internal/gqltest"
	"paygraph/internal/testenv"
	"paygraph/sandbox"
)

// testGateway is a gateway on a real loopback port in front of some REST
// server (the sandbox unless a test gives its own), spoken to through the
// project's one GraphQL test client; every answer is checked for the
// sandbox's secrets.
type testGateway struct {
	gqltest.Client
	Sandbox *sandbox.Server
	Biz     []sandbox.Business
	// GW is the gateway itself, for tests and benchmarks that serve
	// requests in memory (nil for a process).
	GW *gateway.Gateway
}

// newTestGateway is a client of the gateway at url that fails the test
// on any answer holding a sandbox secret.
func newTestGateway(url string) *testGateway {
	return &testGateway{Client: gqltest.Client{URL: url, Forbidden: []string{"sk_test_", "sk_prod_"}}}
}

// setup says what startGateway starts. Its zero value is the gateway at
// the tests' defaults in front of a fresh sandbox, its logs discarded.
type setup struct {
	// env holds settings, and "Config.<field>" keys (configFields).
	// REST_UNACCEPTED_CALLS_PER_SECOND and
	// RATE_LIMIT_ANONYMOUS_PER_ADDRESS_PER_SECOND are off unless env sets
	// them: every request here comes from one address, 127.0.0.1, standing
	// for many clients, and these tests' merchants stand for pairs the
	// REST API accepted long ago (a REST stub that holds every call would
	// otherwise hold the pair's first call, its probe, and nothing else).
	// TestAnonymousAddressBudget and unaccepted_test.go test those bounds.
	env map[string]string
	// getenv, when set, is what LoadConfig reads instead of env, without
	// the tests' defaults (the benchmarks measure the binary's own).
	getenv func(string) string
	rest   http.Handler      // the REST API, on loopback; nil: a fresh sandbox
	restRT http.RoundTripper // instead of rest: the REST API with no network
	logger *slog.Logger      // the gateway's logger
	logs   io.Writer         // instead of logger: the binary's logger, writing here
	opts   []gateway.Option  // a last say on the configuration (tracing, clock)
	// process runs the whole process as `go run .` does (embedded sandbox,
	// demo data, PORT, Serve) on a free port, until the test ends; only
	// env applies.
	process bool
}

// startGateway starts what s says and stops it when the test ends.
func startGateway(t testing.TB, s setup) *testGateway {
	t.Helper()
	if s.process {
		return startProcess(t, s.env)
	}
	g := newTestGateway("")
	getenv := s.getenv
	if getenv == nil {
		getenv = func(k string) string {
			if v, ok := s.env[k]; ok || (k != "REST_UNACCEPTED_CALLS_PER_SECOND" && k != "RATE_LIMIT_ANONYMOUS_PER_ADDRESS_PER_SECOND") {
				return v
			}
			return "0"
		}
	}
	cfg, err := gateway.LoadConfig(nil, getenv, nil)
	if err != nil {
		t.Fatal(err)
	}
	opts := []gateway.Option{gateway.WithLogger(slog.New(slog.DiscardHandler))}
	switch {
	case s.logger != nil:
		opts[0] = gateway.WithLogger(s.logger)
	case s.logs != nil:
		opts[0] = gateway.WithLogger(gateway.NewLogger(s.logs, cfg))
	}
	if s.restRT != nil {
		cfg.RESTBaseURL = "http://rest.invalid"
		opts = append(opts, gateway.WithRESTTransport(s.restRT))
	} else {
		rest := s.rest
		if rest == nil {
			g.Sandbox = sandbox.New(sandbox.Options{StatusParam: s.env["REST_STATUS_PARAM"]})
			g.Biz = g.Sandbox.Businesses()
			rest = g.Sandbox
		}
		restSrv := httptest.NewServer(rest)
		t.Cleanup(restSrv.Close)
		cfg.RESTBaseURL = restSrv.URL
	}
	setConfigFields(t, &cfg, s.env)
	gw, err := gateway.New(cfg, append(opts, s.opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close() })
	srv := httptest.NewServer(gw)
	t.Cleanup(srv.Close)
	g.URL, g.GW = srv.URL, gw
	return g
}

// configFields are the Config fields without a setting of their own
// (derived or fixed by LoadConfig: docs/operations.md, "Settings removed
// in this release") that tests set, under "Config.<field>" keys of the
// env maps, so that no such key reads as a setting.
var configFields = map[string]func(c *gateway.Config, v string) error{
	"Config.BreakerCooldown":                    durationField(func(c *gateway.Config) *time.Duration { return &c.BreakerCooldown }),
	"Config.LiveInitTimeout":                    durationField(func(c *gateway.Config) *time.Duration { return &c.LiveInitTimeout }),
	"Config.LiveMaxLifetime":                    durationField(func(c *gateway.Config) *time.Duration { return &c.LiveMaxLifetime }),
	"Config.Subscriptions.MaxLifetime":          durationField(func(c *gateway.Config) *time.Duration { return &c.Subscriptions.MaxLifetime }),
	"Config.LiveMaxConnections":                 intField(func(c *gateway.Config) *int { return &c.LiveMaxConnections }),
	"Config.LiveMaxOperations":                  intField(func(c *gateway.Config) *int { return &c.LiveMaxOperations }),
	"Config.Subscriptions.MaxPerMerchant":       intField(func(c *gateway.Config) *int { return &c.Subscriptions.MaxPerMerchant }),
	"Config.MaxDepth":                           intField(func(c *gateway.Config) *int { return &c.MaxDepth }),
	"Config.MaxFields":                          intField(func(c *gateway.Config) *int { return &c.MaxFields }),
	"Config.MaxQueryLength":                     intField(func(c *gateway.Config) *int { return &c.MaxQueryLength }),
	"Config.RESTMaxInFlightPerMerchant":         intField(func(c *gateway.Config) *int { return &c.RESTMaxInFlightPerMerchant }),
	"Config.RESTUnaccepted.PerAddressPerSecond": intField(func(c *gateway.Config) *int { return &c.RESTUnaccepted.PerAddressPerSecond }),
	"Config.RateLimitRESTBurst":                 intField(func(c *gateway.Config) *int { return &c.RateLimitRESTBurst }),
	"Config.RateLimitRequestsBurst":             intField(func(c *gateway.Config) *int { return &c.RateLimitRequestsBurst }),
	"Config.RateLimitAnonymousBurst":            intField(func(c *gateway.Config) *int { return &c.RateLimitAnonymousBurst }),
	"Config.RateLimitAnonymousPerAddressBurst":  intField(func(c *gateway.Config) *int { return &c.RateLimitAnonymousPerAddressBurst }),
	"Config.RESTMaxPage": func(c *gateway.Config, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		c.RESTMaxPage = n
		return err
	},
}

// setConfigFields sets the configFields that env names.
func setConfigFields(t testing.TB, c *gateway.Config, env map[string]string) {
	t.Helper()
	for k, v := range env {
		if !strings.HasPrefix(k, "Config.") {
			continue
		}
		set, ok := configFields[k]
		if !ok {
			t.Fatalf("%s: no such Config field in configFields", k)
		}
		if err := set(c, v); err != nil {
			t.Fatalf("%s=%q: %v", k, v, err)
		}
	}
}

func durationField(field func(*gateway.Config) *time.Duration) func(*gateway.Config, string) error {
	return func(c *gateway.Config, v string) (err error) {
		*field(c), err = time.ParseDuration(v)
		return err
	}
}

func intField(field func(*gateway.Config) *int) func(*gateway.Config, string) error {
	return func(c *gateway.Config, v string) (err error) {
		*field(c), err = strconv.Atoi(v)
		return err
	}
}

func creds(b sandbox.Business) http.Header {
	return http.Header{"X-Api-Key": {b.APIKey}, "X-Api-Secret": {b.APISecret}}
}

// startProcess is startGateway's process: the gateway as main runs it,
// ready (its /readyz answers 200) when it returns.
func startProcess(t testing.TB, env map[string]string) *testGateway {
	t.Helper()
	port := testenv.FreeLoopbackPort(t)
	cfg, err := gateway.LoadConfig(nil, func(k string) string {
		if k == "PORT" {
			return strconv.Itoa(port)
		}
		return env[k]
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	exited := make(chan error, 1)
	go func() { exited <- runGateway(ctx, cfg) }()
	t.Cleanup(func() {
		stop()
		if err := <-exited; err != nil {
			t.Errorf("run: %v", err)
		}
	})
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	ready := time.NewTicker(20 * time.Millisecond)
	defer ready.Stop()
	deadline := time.After(10 * time.Second)
	for {
		resp, err := http.Get(url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return newTestGateway(url)
			}
		}
		select {
		case err := <-exited:
			exited <- err // for the cleanup
			t.Fatalf("the gateway exited before it was ready: %v", err)
		case <-deadline:
			t.Fatalf("gateway did not become ready: %v", err)
		case <-ready.C:
		}
	}
}

// runGateway is what main does with cfg: build the gateway (the embedded
// sandbox when cfg has no REST_BASE_URL), listen on PORT, serve until ctx
// is done, shut down gracefully.
func runGateway(ctx context.Context, cfg gateway.Config) error {
	gw, err := gateway.New(cfg)
	if err != nil {
		return err
	}
	defer gw.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(cfg.Port))
	if err != nil {
		return err
	}
	return gw.Serve(ctx, ln)
}
