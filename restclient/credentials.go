package restclient

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"paygraph/internal/opscope"
)

// The REST API's credential headers (spelled as its documentation does).
// The gateway's callers send the same two, which are forwarded unchanged:
// every package names them by these constants.
const (
	HeaderAPIKey    = "x-api-key"
	HeaderAPISecret = "x-api-secret"
)

// Credentials is the caller's credential pair, forwarded unchanged as the
// x-api-key and x-api-secret headers of every REST call made for it.
//
// Every textual form of a Credentials (String, %v, %+v, %#v, %s, %q, %d,
// slog, encoding/json) is redacted: it shows at most the key's prefix
// ("ak_test_…") and never the secret.
type Credentials struct {
	APIKey    string
	APISecret string
}

type credentialsKey struct{}

// credentialsValue is what WithCredentials puts in a context: the pair
// and what its REST calls share.
type credentialsValue struct {
	c Credentials
	// header is the header of every REST call made with the context,
	// shared by them: RoundTrippers only read a request's header.
	header     http.Header
	headerOnce sync.Once
	headers    [2]string // the header's two credential values
	// secrets is the pair again for SecretsOf, apart from the header's.
	secrets      [2]string
	merchant     merchantKey // the Limiter's key of the pair
	merchantName string      // MerchantOf's answer
	// accepted: the REST API has accepted the pair, as far as this
	// context knows (unaccepted.go).
	accepted atomic.Bool
	// denied is the gate's refusal of an earlier call with this context,
	// answered to its later calls while it holds.
	denied atomic.Pointer[denial]
	// storeAsked: the AcceptedStore was asked about the pair for this
	// context and did not know it.
	storeAsked atomic.Bool
	// refused: the REST API refused the pair (401, 403) on a call of this
	// context (Refused).
	refused atomic.Bool
}

// WithCredentials returns a context carrying c, and its merchant identity
// under ctx's merchant key (WithMerchantKey; merchant.go).
func WithCredentials(ctx context.Context, c Credentials) context.Context {
	k := MerchantKeyFrom(ctx)
	if k == nil {
		k = processMerchantKey
	}
	v := &credentialsValue{c: c, headers: [2]string{c.APIKey, c.APISecret}, secrets: [2]string{c.APIKey, c.APISecret}, merchant: k.sum(c)}
	var name [2 * len(merchantKey{})]byte
	hex.Encode(name[:], v.merchant[:])
	v.merchantName = string(name[:])
	return opscope.WithValue(ctx, credentialsKey{}, v)
}

// requestHeader is the header of v's REST calls: the credentials and
// Accept, one map for all the calls of the context (read only).
func (v *credentialsValue) requestHeader() http.Header {
	v.headerOnce.Do(func() {
		v.header = http.Header{
			canonicalAPIKey:    v.headers[0:1:1],
			canonicalAPISecret: v.headers[1:2:2],
			"Accept":           acceptJSON,
		}
	})
	return v.header
}

// CredentialsFrom returns the credentials carried by ctx; ok is false when
// there are none or when either half is empty.
func CredentialsFrom(ctx context.Context) (Credentials, bool) {
	v, _ := credentialsFrom(ctx)
	return v.c, v.c.APIKey != "" && v.c.APISecret != ""
}

// SecretsOf returns the two values of the usable pair ctx carries, or
// nil: the strings that logs, metrics and traces must never hold. The
// slice is the context's own: read only.
func SecretsOf(ctx context.Context) []string {
	v, ok := credentialsFrom(ctx)
	if !ok {
		return nil
	}
	return v.secrets[:]
}

// credentialsFrom is CredentialsFrom with the header values (a zero
// value, never nil, when ctx has none).
func credentialsFrom(ctx context.Context) (*credentialsValue, bool) {
	v, _ := ctx.Value(credentialsKey{}).(*credentialsValue)
	if v == nil {
		return &credentialsValue{}, false
	}
	return v, v.c.APIKey != "" && v.c.APISecret != ""
}

// This package owns the shape of a credential (ak_test_…, sk_prod_…) and
// how each is written where it must not be read; observe/ is handed
// RedactCredentials and RedactKey.

var (
	reSecret = regexp.MustCompile(`sk_(?:test|prod|live)_[A-Za-z0-9]+`)
	reAPIKey = regexp.MustCompile(`ak_(?:test|prod|live)_[A-Za-z0-9]+`)
)

// RedactCredentials rewrites every credential-shaped run of s, anyone's:
// an API secret becomes "sk_…[redacted]", an API key keeps only its
// prefix ("ak_test_…").
func RedactCredentials(s string) string {
	if strings.Contains(s, "sk_") {
		s = reSecret.ReplaceAllLiteralString(s, "sk_…[redacted]")
	}
	if strings.Contains(s, "ak_") {
		s = reAPIKey.ReplaceAllStringFunc(s, RedactKey)
	}
	return s
}

// RedactKey is how an API key is written where it may be seen: its
// prefix ("ak_test_…"), "[none]" when empty, or "[redacted]" when the key
// does not look like "<word>_<word>_<rest>".
func RedactKey(key string) string {
	if key == "" {
		return "[none]"
	}
	// Up to the second '_' within the first 16 bytes, letters and digits.
	underscores := 0
	for i := 0; i < len(key) && i < 16; i++ {
		c := key[i]
		switch {
		case c == '_':
			underscores++
			if underscores == 2 {
				if i+1 == len(key) {
					return "[redacted]" // nothing after the prefix: it would be the whole key
				}
				return key[:i+1] + "…"
			}
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		default:
			return "[redacted]"
		}
	}
	return "[redacted]"
}

// String returns a redacted form: the key's prefix ("ak_test_…") or
// "[redacted]"; never the secret.
func (c Credentials) String() string { return RedactKey(c.APIKey) }

// GoString implements fmt.GoStringer (%#v) without the secret.
func (c Credentials) GoString() string {
	secret := "[none]"
	if c.APISecret != "" {
		secret = "[redacted]"
	}
	return "restclient.Credentials{APIKey:" + strconv.Quote(RedactKey(c.APIKey)) +
		", APISecret:" + strconv.Quote(secret) + "}"
}

// Format implements fmt.Formatter so that every verb (%v, %+v, %#v, %s,
// %q, %x, %d...) prints the redacted form, never the fields.
func (c Credentials) Format(f fmt.State, verb rune) {
	switch {
	case verb == 'v' && f.Flag('#'):
		_, _ = io.WriteString(f, c.GoString())
	case verb == 'q':
		_, _ = io.WriteString(f, strconv.Quote(c.String()))
	default:
		_, _ = io.WriteString(f, c.String())
	}
}

// LogValue implements slog.LogValuer.
func (c Credentials) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("api_key", RedactKey(c.APIKey)),
		slog.Bool("api_secret_set", c.APISecret != ""),
	)
}

// MarshalJSON keeps encoding/json from printing the secret.
func (c Credentials) MarshalJSON() ([]byte, error) {
	return []byte(strconv.Quote(c.String())), nil
}

// scrub replaces any occurrence of the credentials in msg (an upstream
// error message, say) by "[redacted]".
func (c Credentials) scrub(msg string) string {
	if c.APISecret != "" && strings.Contains(msg, c.APISecret) {
		msg = strings.ReplaceAll(msg, c.APISecret, "[redacted]")
	}
	if c.APIKey != "" && strings.Contains(msg, c.APIKey) {
		msg = strings.ReplaceAll(msg, c.APIKey, "[redacted]")
	}
	return msg
}
