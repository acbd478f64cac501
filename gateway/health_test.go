package gateway_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"paygraph/gateway"
)

// TestProbesListener: HEALTH_PORT's listener answers /healthz and /readyz
// and nothing else, beside the public port, until Serve returns.
func TestProbesListener(t *testing.T) {
	cfg, err := gateway.LoadConfig(nil, func(string) string { return "" }, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ShutdownGrace = time.Second
	gw, err := gateway.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	listen := func() net.Listener {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		return ln
	}
	ln, probes := listen(), listen()
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- gw.ServeProbes(ctx, ln, probes) }()
	base := "http://" + probes.Addr().String()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, c := range []struct {
		path string
		code int
	}{
		{"/healthz", http.StatusOK},
		{"/readyz", http.StatusOK},
		{"/graphql", http.StatusNotFound},
		{"/metrics", http.StatusNotFound},
		{"/", http.StatusNotFound},
	} {
		if code, body := get(c.path); code != c.code {
			t.Errorf("GET %s on the probes' port: %d %q, want %d", c.path, code, body, c.code)
		}
	}
	stop()
	if err := <-served; err != nil {
		t.Logf("serve: %v", err)
	}
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Error("the probes' listener still answers after Serve returned")
	}
}
