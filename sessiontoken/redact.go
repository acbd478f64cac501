package sessiontoken

import (
	"regexp"
	"strings"
)

// RedactedToken replaces a token in text.
const RedactedToken = Prefix + "[redacted]"

// reToken matches a token wherever it stands, whatever follows its prefix
// (truncated or tampered too).
var reToken = regexp.MustCompile(`v4\.local\.[A-Za-z0-9_\-.]*`)

// RedactTokens replaces every token-shaped run of s by RedactedToken: a token
// is a bearer credential.
func RedactTokens(s string) string {
	if !strings.Contains(s, Prefix) {
		return s
	}
	return reToken.ReplaceAllLiteralString(s, RedactedToken)
}
