package sessiontoken

import (
	"strings"
	"testing"
	"time"
)

func TestRedactTokens(t *testing.T) {
	t.Parallel()
	tok := mint(t, keyring(t, newClock(), testKeyA), AllReads(), time.Hour)
	tests := []struct{ name, in, want string }{
		{"no token", "GET /graphql 200", "GET /graphql 200"},
		{"a token", tok, RedactedToken},
		{"in a header line", "Authorization: Bearer " + tok + " (from 10.0.0.1)", "Authorization: Bearer " + RedactedToken + " (from 10.0.0.1)"},
		{"two tokens", tok + "," + tok, RedactedToken + "," + RedactedToken},
		{"in JSON", `{"token":"` + tok + `"}`, `{"token":"` + RedactedToken + `"}`},
		{"truncated", "bad token " + tok[:30] + "…", "bad token " + RedactedToken + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := RedactTokens(tt.in)
			if got != tt.want {
				t.Errorf("RedactTokens = %q, want %q", got, tt.want)
			}
			if body := strings.TrimPrefix(tok, Prefix); strings.Contains(got, body[:16]) {
				t.Error("part of the token survived")
			}
		})
	}
}

func BenchmarkRedactTokensNoToken(b *testing.B) {
	s := `{"level":"INFO","msg":"request","method":"POST","path":"/graphql","status":200,"duration_ms":3}`
	b.ReportAllocs()
	for b.Loop() {
		RedactTokens(s)
	}
}
