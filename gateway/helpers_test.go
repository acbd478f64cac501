package gateway_test

import (
	"context"
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
}

// newTestGateway is a client of the gateway at url that fails the test
// on any answer holding a sandbox secret.
func newTestGateway(url string) *testGateway {
	return &testGateway{Client: gqltest.Client{URL: url, Forbidden: []string{"sk_test_", "sk_prod_"}}}
}

func startGateway(t testing.TB, env map[string]string, rest http.Handler) *testGateway {
	t.Helper()
	return startGatewayWith(t, env, rest, slog.New(slog.DiscardHandler))
}

// startGatewayWith is startGateway with the gateway's logger and a last
// say on its configuration (for settings that run makes, such as tracing).
func startGatewayWith(t testing.TB, env map[string]string, rest http.Handler, logger *slog.Logger, opts ...gateway.Option) *testGateway {
	t.Helper()
	g := newTestGateway("")
	if rest == nil {
		g.Sandbox = sandbox.New(sandbox.Options{StatusParam: env["REST_STATUS_PARAM"]})
		g.Biz = g.Sandbox.Businesses()
		rest = g.Sandbox
	}
	restSrv := httptest.NewServer(rest)
	t.Cleanup(restSrv.Close)
	cfg, err := gateway.LoadConfig(nil, func(k string) string {
		if v, ok := env[k]; ok || (k != "REST_UNACCEPTED_CALLS_PER_SECOND" && k != "RATE_LIMIT_ANONYMOUS_PER_ADDRESS_PER_SECOND") {
			return v
		}
		// The per-address anonymous budget is off unless a test asks
		// too: every request here comes from one address, 127.0.0.1,
		// standing for many clients (TestAnonymousAddressBudget tests it).
		// Off unless a test asks: these tests' merchants stand for pairs
		// the REST API accepted long ago (a REST stub that holds every
		// call would otherwise hold the pair's first call, its probe,
		// and nothing else). unaccepted_test.go tests the bounds.
		return "0"
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RESTBaseURL = restSrv.URL
	setConfigFields(t, &cfg, env)
	gw, err := gateway.New(cfg, append([]gateway.Option{gateway.WithLogger(logger)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close() })
	srv := httptest.NewServer(gw)
	t.Cleanup(srv.Close)
	g.URL = srv.URL
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

// startSandboxGateway runs the whole process as `go run .` does (embedded
// sandbox, demo data) on a free port, and stops it when the test ends.
func startSandboxGateway(t testing.TB) string {
	t.Helper()
	return startSandboxGatewayEnv(t, nil)
}

// startSandboxGatewayEnv is startSandboxGateway with settings.
func startSandboxGatewayEnv(t testing.TB, env map[string]string) string {
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
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return url
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("gateway did not become ready: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
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
