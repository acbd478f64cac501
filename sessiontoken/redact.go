package sessiontoken

// This file lets the logger treat a token like a secret: whoever holds one
// reads what its scope allows until it expires.

import (
	"regexp"
	"strings"
)

// RedactedToken replaces a token in text.
const RedactedToken = Prefix + "[redacted]"

// reToken matches a token wherever it stands in a text, whatever follows
// its prefix (a truncated or a tampered token is redacted too).
var reToken = regexp.MustCompile(`v4\.local\.[A-Za-z0-9_\-.]*`)

// LooksLikeToken tells whether s, with surrounding spaces and an optional
// "Bearer " scheme taken off, is shaped like a session token: the prefix
// "v4.local." and base64url text. It does not check the token; it tells a
// redacting logger which attribute values to treat as secrets.
func LooksLikeToken(s string) bool {
	s = strings.TrimSpace(s)
	if len(s) > 7 && strings.EqualFold(s[:7], "bearer ") {
		s = strings.TrimSpace(s[7:])
	}
	rest, ok := strings.CutPrefix(s, Prefix)
	if !ok || rest == "" {
		return false
	}
	for i := 0; i < len(rest); i++ {
		if c := rest[i]; c != '.' && !isBase64URL(rest[i:i+1]) {
			return false
		}
	}
	return true
}

// RedactTokens replaces every token-shaped run of s (the prefix and what
// follows it in the token alphabet) by RedactedToken. Text without the
// prefix is returned as it is, without a regexp run: this is called on
// every string of every log line.
func RedactTokens(s string) string {
	if !strings.Contains(s, Prefix) {
		return s
	}
	return reToken.ReplaceAllLiteralString(s, RedactedToken)
}
