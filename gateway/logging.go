package gateway

import (
	"context"
	"io"
	"log/slog"
	"net/url"
	"slices"

	"paygraph/gqlhttp"
	"paygraph/graph/loaders"
	"paygraph/observe"
	"paygraph/restclient"
	"paygraph/sessiontoken"
)

// NewLogger is the process's logger (LOG_FORMAT, LOG_LEVEL): observe's redacting
// handler, told the shapes of credentials and the request's own
// credential pair, which it takes out of every line logged in that
// request's context whatever their shape.
func NewLogger(w io.Writer, cfg Config) *slog.Logger {
	return observe.NewLogger(w, cfg.LogFormat, cfg.LogLevel, observeOptions())
}

// quietPaths are the routes (gateway.go) polled by machines, not called
// by clients: the kubelet's probes and Prometheus's scrapes, 20 or more a
// minute per pod. Their access lines are debug, so that LOG_LEVEL=info
// logs callers' requests only.
var quietPaths = []string{"/healthz", "/readyz", "/metrics"}

// observeOptions is what observe is told of the parts it observes, from
// their owners: restclient's route names and credential shapes,
// sessiontoken's token shape, the loaders' names, the caller's own
// pair, and the routes whose access lines are debug. The breaker state is
// added by wire, which has the client.
func observeOptions() observe.Options {
	return observe.Options{
		DebugPaths:  quietPaths,
		RouteOf:     func(u *url.URL) string { return string(restclient.EndpointOf(u)) },
		LoaderNames: loaders.Names,
		Redact:      redactCredentials,
		RedactKey:   restclient.RedactKey,
		Secrets:     callerSecrets,
	}
}

// redactCredentials rewrites every credential-shaped run of s: API keys
// and secrets as restclient writes them, session tokens as sessiontoken
// does.
func redactCredentials(s string) string {
	return sessiontoken.RedactTokens(restclient.RedactCredentials(cutUnsolicited(s)))
}

// callerSecrets are the request's own credentials (what its credential
// headers held, as gqlhttp.Credentials read them at the top of the router,
// or the pair its session token carries, and the token itself), which the
// logger takes out of any line logged in the request's context, and which
// no request id, metric label or span name may hold, whatever their shape.
// Read only (observe never changes it): a request has one or the other,
// so that one is returned as it is, without a copy per log line.
func callerSecrets(ctx context.Context) []string {
	caller, bearer := gqlhttp.CallerSecrets(ctx), gqlhttp.BearerSecrets(ctx)
	switch {
	case len(bearer) == 0:
		return caller
	case len(caller) == 0:
		return bearer
	}
	return slices.Concat(caller, bearer)
}
