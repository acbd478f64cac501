package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
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
	"paygraph/internal/testenv"
	"paygraph/sandbox"
)

// testGateway is a gateway on a real loopback port in front of some REST
// server (the sandbox unless a test gives its own).
type testGateway struct {
	URL     string
	Sandbox *sandbox.Server
	Biz     []sandbox.Business
}

func startGateway(t testing.TB, env map[string]string, rest http.Handler) *testGateway {
	t.Helper()
	return startGatewayWith(t, env, rest, slog.New(slog.DiscardHandler))
}

// startGatewayWith is startGateway with the gateway's logger and a last
// say on its configuration (for settings that run makes, such as tracing).
func startGatewayWith(t testing.TB, env map[string]string, rest http.Handler, logger *slog.Logger, opts ...gateway.Option) *testGateway {
	t.Helper()
	g := &testGateway{}
	if rest == nil {
		g.Sandbox = sandbox.New(sandbox.Options{StatusParam: env["REST_STATUS_PARAM"]})
		g.Biz = g.Sandbox.Businesses()
		rest = g.Sandbox
	}
	restSrv := httptest.NewServer(rest)
	t.Cleanup(restSrv.Close)
	cfg, err := gateway.LoadConfig(nil, func(k string) string { return env[k] }, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RESTBaseURL = restSrv.URL
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

type gqlError struct {
	Message    string         `json:"message"`
	Path       []any          `json:"path"`
	Extensions map[string]any `json:"extensions"`
}

type gqlResponse struct {
	Status int
	Data   json.RawMessage `json:"data"`
	Errors []gqlError      `json:"errors"`
}

func (r *gqlResponse) decode(t testing.TB, into any) {
	t.Helper()
	if err := json.Unmarshal(r.Data, into); err != nil {
		t.Fatalf("decoding data %s: %v", r.Data, err)
	}
}

func (r *gqlResponse) codes() []string {
	var out []string
	for _, e := range r.Errors {
		c, _ := e.Extensions["code"].(string)
		out = append(out, c)
	}
	return out
}

func (r *gqlResponse) wantNoErrors(t testing.TB) {
	t.Helper()
	if len(r.Errors) > 0 {
		t.Fatalf("unexpected errors: %+v", r.Errors)
	}
}

func (r *gqlResponse) wantCode(t testing.TB, code string) gqlError {
	t.Helper()
	for _, e := range r.Errors {
		if e.Extensions["code"] == code {
			return e
		}
	}
	t.Fatalf("want an error with code %s, got %+v (data %s)", code, r.Errors, r.Data)
	return gqlError{}
}

func creds(b sandbox.Business) http.Header {
	return http.Header{"X-Api-Key": {b.APIKey}, "X-Api-Secret": {b.APISecret}}
}

func (g *testGateway) post(t testing.TB, h http.Header, query string, vars map[string]any) *gqlResponse {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	return g.send(t, http.MethodPost, "/graphql", h, body)
}

func (g *testGateway) send(t testing.TB, method, path string, h http.Header, body []byte) *gqlResponse {
	t.Helper()
	req, err := http.NewRequest(method, g.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = h.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := &gqlResponse{Status: resp.StatusCode}
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatalf("%s %s: status %d, body %q is not a GraphQL response", method, path, resp.StatusCode, raw)
	}
	for _, secretish := range []string{"sk_test_", "sk_prod_"} {
		if strings.Contains(string(raw), secretish) {
			t.Fatalf("response contains a secret: %s", raw)
		}
	}
	return out
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
