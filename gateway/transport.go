package gateway

import (
	"net"
	"net/http"
	"time"
)

// newTransport is the HTTP transport to the REST API. Its keep-alive pool
// is sized for the concurrency bounds, so that steady load reuses
// connections instead of dialling.
func newTransport(cfg Config) *http.Transport {
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
