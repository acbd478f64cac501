package gateway

import (
	"context"
	"io"
	"log/slog"
	"slices"

	"paygraph/gqlhttp"
	"paygraph/observe"
	"paygraph/sessiontoken"
)

// NewLogger is the process's logger (LOG_FORMAT): observe's redacting
// handler, told the request's own credential pair, which it takes out of
// every line logged in that request's context whatever their shape, and
// taking out anything shaped like a session token, whoever's it is.
func NewLogger(w io.Writer, cfg Config) *slog.Logger {
	l := observe.NewLoggerWith(w, cfg.LogFormat, slog.LevelInfo, callerSecrets)
	return slog.New(observe.WithStringRedaction(l.Handler(), sessiontoken.RedactTokens))
}

// callerSecrets are the request's own credentials (what its credential
// headers held, as gqlhttp.Credentials read them at the top of the router,
// or the pair its session token carries, and the token itself), which the
// logger takes out of any line logged in the request's context, and which
// no request id, metric label or span name may hold, whatever their shape.
func callerSecrets(ctx context.Context) []string {
	return slices.Concat(gqlhttp.CallerSecrets(ctx), gqlhttp.BearerSecrets(ctx))
}
