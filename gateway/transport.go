package gateway

// The REST API's base transport (REST_TRANSPORT): fasthttp's client
// behind an http.RoundTripper (fasttransport/, docs/design.md says why),
// or net/http's. Both are sized and timed alike; the metrics and tracing
// transports wrap either.

import (
	"cmp"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"time"

	"golang.org/x/net/http/httpproxy"

	"paygraph/fasttransport"
	"paygraph/restclient"
)

// The values of REST_TRANSPORT.
const (
	restTransportFast    = "fasthttp"
	restTransportNetHTTP = "net/http"
)

// newTransport is the HTTP transport to the REST API at baseURL. Its
// keep-alive pool is sized for the concurrency bounds, so that steady
// load reuses connections instead of dialling. fasthttp's is used unless
// REST_TRANSPORT says net/http or a proxy from the environment applies
// to baseURL (fasthttp's client speaks to no proxy): that is logged.
func newTransport(cfg Config, baseURL string, logger *slog.Logger) http.RoundTripper {
	if cfg.RESTTransport == restTransportFast {
		proxy := proxyFor(baseURL)
		if proxy == "" {
			return newFastTransport(cfg)
		}
		if logger != nil {
			logger.Warn("REST_TRANSPORT=fasthttp speaks to no proxy: the REST API is called through net/http's transport, by the proxy the environment sets for it",
				"proxy", proxy)
		}
	}
	return newNetHTTPTransport(cfg)
}

// proxyFor is the proxy (redacted) that the environment applies to
// baseURL, as http.ProxyFromEnvironment reads it (which reads it once a
// process: httpproxy's own reading, so that tests can set it), or "".
func proxyFor(baseURL string) string {
	u, err := url.Parse(baseURL)
	if err != nil {
		return ""
	}
	p, err := httpproxy.FromEnvironment().ProxyFunc()(u)
	if err != nil {
		return "(invalid proxy setting)"
	}
	if p == nil {
		return ""
	}
	return p.Redacted()
}

func newFastTransport(cfg Config) *fasttransport.Transport {
	maxBody := int(cmp.Or(cfg.RESTMaxBody, restclient.DefaultMaxBodyBytes))
	maxPage := int(cmp.Or(cfg.RESTMaxPage, restclient.DefaultMaxPageBytes))
	return fasttransport.New(fasttransport.Config{
		MaxConnsPerHost:       cmp.Or(cfg.RESTMaxInFlight, restclient.DefaultMaxInFlight),
		ResponseHeaderTimeout: cfg.RESTTimeout,
		DialTimeout:           5 * time.Second,
		KeepAlive:             30 * time.Second,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   5 * time.Second,
		// fasthttp holds an answer whole: each call is held to the limit
		// restclient reads it to, a record's or a list page's, so that a
		// call holds no more than it did through net/http (an error's
		// body: restclient reads less of it).
		MaxResponseBytes: max(maxBody, maxPage),
		MaxResponseBytesFor: func(r *http.Request) int {
			if restclient.EndpointOf(r.URL) == restclient.EndpointListPayments {
				return maxPage
			}
			return maxBody
		},
	})
}

func newNetHTTPTransport(cfg Config) *http.Transport {
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
