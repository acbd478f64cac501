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

// NewLogger is the process's logger, behind observe's redacting handler.
func NewLogger(w io.Writer, cfg Config) *slog.Logger {
	return observe.NewLogger(w, cfg.LogFormat, cfg.LogLevel, observeOptions())
}

// observeOptions is what observe is told of the parts it observes, by their
// owners; wire adds the rest.
func observeOptions() observe.Options {
	return observe.Options{
		// Polled by machines: debug, so that LOG_LEVEL=info logs callers only.
		DebugPaths:  []string{"/healthz", "/readyz", "/metrics"},
		RouteOf:     func(u *url.URL) string { return string(restclient.EndpointOf(u)) },
		LoaderNames: loaders.Names,
		Redact:      redactCredentials,
		RedactKey:   restclient.RedactKey,
		Secrets:     callerSecrets,
	}
}

// redactCredentials rewrites every credential-shaped run of s (API keys,
// secrets, session tokens).
func redactCredentials(s string) string {
	return sessiontoken.RedactTokens(restclient.RedactCredentials(cutUnsolicited(s)))
}

// callerSecrets are the request's own credentials (headers', token's), which
// nothing observed may hold.
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
