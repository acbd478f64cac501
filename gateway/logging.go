package gateway

import (
	"context"
	"io"
	"log/slog"

	"paygraph/gqlhttp"
	"paygraph/observe"
)

// NewLogger is the process's logger (LOG_FORMAT): observe's redacting
// handler, told the request's own credential pair, which it takes out of
// every line logged in that request's context whatever their shape.
func NewLogger(w io.Writer, cfg Config) *slog.Logger {
	return observe.NewLoggerWith(w, cfg.LogFormat, slog.LevelInfo, callerSecrets)
}

// callerSecrets are the request's own credentials (what its credential
// headers held, as gqlhttp.Credentials read them at the top of the router),
// which the logger takes out of any line logged in the request's context,
// and which no request id, metric label or span name may hold, whatever
// their shape.
func callerSecrets(ctx context.Context) []string { return gqlhttp.CallerSecrets(ctx) }
