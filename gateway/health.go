package gateway

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"
)

// healthz says the process is alive.
func healthz(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") }

// readyz says the gateway takes requests: 503 once shutdown began. It ignores
// the circuit breaker: a REST outage must not take every replica out of the
// Service at once.
func (g *Gateway) readyz(w http.ResponseWriter, _ *http.Request) {
	if !g.ready.Load() {
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
		return
	}
	_, _ = io.WriteString(w, "ready\n")
}

// serveProbes serves /healthz and /readyz on ln (HEALTH_PORT) with its own
// cap: no client can fail them.
func (g *Gateway) serveProbes(ln net.Listener) (stop func()) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", healthz)
	mux.HandleFunc("GET /readyz", g.readyz)
	conns := newConnCap(ln, 64, nil)
	srv := &http.Server{
		Handler:           conns.serve(mux),
		ConnState:         conns.track,
		ConnContext:       connContext,
		ReadHeaderTimeout: 2 * time.Second,
		ReadTimeout:       5 * time.Second,
		WriteTimeout:      5 * time.Second,
		IdleTimeout:       30 * time.Second,
		MaxHeaderBytes:    8 << 10,
		ErrorLog:          slog.NewLogLogger(g.logger.Handler(), slog.LevelWarn),
	}
	g.logger.Info("probes listening", "addr", ln.Addr().String())
	go func() { _ = srv.Serve(conns) }()
	return func() { _ = srv.Close() }
}

// HealthCheck probes /healthz at host (unset: loopback) and port and returns
// the exit code (no curl).
func HealthCheck(host string, port int) int {
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	c := &http.Client{Timeout: 3 * time.Second}
	resp, err := c.Get("http://" + net.JoinHostPort(host, strconv.Itoa(port)) + "/healthz")
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
