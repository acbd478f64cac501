package observe

import "log/slog"

// RedactingHandler wraps h as NewLogger does (redactingHandler).
func RedactingHandler(h slog.Handler, o Options) slog.Handler { return &redactingHandler{h: h, o: o} }
