package gateway

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"
)

// healthz says the process is alive.
func healthz(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") }

// readyz says the gateway takes requests: 503 once shutdown began, so a
// load balancer stops sending before in-flight requests are drained. It
// ignores the REST API's circuit breaker: a REST outage must not take every
// replica out of the Service at once.
func (g *Gateway) readyz(w http.ResponseWriter, _ *http.Request) {
	if !g.ready.Load() {
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
		return
	}
	_, _ = io.WriteString(w, "ready\n")
}

// HealthCheck probes the local /healthz at host (HOST; "" or an unspecified
// address: loopback) and port and returns the process exit code (0
// healthy): the container image has no shell or curl, so the binary checks
// itself (`paygraph -healthcheck`).
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
