package gateway

import (
	"context"
	"io"
	"log/slog"

	"paygraph/observe"
	"paygraph/restclient"
)

// NewLogger is the process's logger (LOG_FORMAT): observe's redacting
// handler, told the request's own credential pair, which it takes out of
// every line logged in that request's context whatever their shape.
func NewLogger(w io.Writer, cfg Config) *slog.Logger {
	return observe.NewLoggerWith(w, cfg.LogFormat, slog.LevelInfo, callerSecrets)
}

// callerSecrets are the request's own credentials.
func callerSecrets(ctx context.Context) []string {
	c, ok := restclient.CredentialsFrom(ctx)
	if !ok {
		return nil
	}
	return []string{c.APIKey, c.APISecret}
}
