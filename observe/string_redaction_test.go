package observe

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// WithStringRedaction's hook reaches every string the redacting handler
// checks: the message, plain and grouped attributes, errors, and
// attributes added with With; the built-in redaction still runs.
func TestWithStringRedaction(t *testing.T) {
	const tok = "TOKEN-abc123"
	hook := func(s string) string { return strings.ReplaceAll(s, tok, "[tok]") }
	cases := []struct {
		name string
		log  func(l *slog.Logger)
	}{
		{"message", func(l *slog.Logger) { l.Info("got " + tok) }},
		{"attribute", func(l *slog.Logger) { l.Info("m", "v", "x "+tok) }},
		{"group", func(l *slog.Logger) { l.Info("m", slog.Group("g", "v", tok)) }},
		{"error", func(l *slog.Logger) { l.Info("m", "err", errors.New("bad "+tok)) }},
		{"with", func(l *slog.Logger) { l.With("v", tok).Info("m") }},
		{"with group", func(l *slog.Logger) { l.WithGroup("g").Info("m", "v", tok) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			for _, base := range []slog.Handler{
				RedactingHandler(slog.NewJSONHandler(&buf, nil)), // a redacting handler
				slog.NewJSONHandler(&buf, nil),                   // wrapped first
			} {
				l := slog.New(WithStringRedaction(base, hook))
				tc.log(l)
				l.Info("m", "secret_hint", "sk_test_abcdefgh")
			}
			if out := buf.String(); strings.Contains(out, tok) || strings.Contains(out, "sk_test_abcdefgh") || !strings.Contains(out, "[tok]") {
				t.Errorf("not redacted by the hook and the built-in rules:\n%s", out)
			}
		})
	}
}
