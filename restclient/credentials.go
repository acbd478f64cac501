package restclient

import (
	"cmp"
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

// The REST API's credential headers, forwarded from the gateway's callers.
const (
	HeaderAPIKey    = "x-api-key"
	HeaderAPISecret = "x-api-secret"
)

// Credentials is the caller's pair, forwarded as its REST calls' credential
// headers; every textual form of it (fmt, slog, encoding/json) shows at most
// the key's prefix, never the secret.
type Credentials struct {
	APIKey    string
	APISecret string
}

type credentialsKey struct{}

// credentialsValue is what WithCredentials puts in a context: the pair and
// what its calls share.
type credentialsValue struct {
	c            Credentials
	header       http.Header // of every REST call of the context; read only
	headerOnce   sync.Once
	headers      [2]string   // the header's two credential values
	secrets      [2]string   // the pair again for SecretsOf, apart from the header's
	merchant     merchantKey // the Limiter's key of the pair
	merchantName string      // MerchantOf's answer
	// As far as this context knows (unaccepted.go):
	accepted   atomic.Bool             // the REST API accepted the pair
	denied     atomic.Pointer[refusal] // the gate's refusal of an earlier call
	storeAsked atomic.Bool             // the store did not know the pair
	refused    atomic.Bool             // the REST API refused it (401, 403)
}

// WithCredentials returns a context carrying c, and its identity under ctx's
// WithMerchantKey.
func WithCredentials(ctx context.Context, c Credentials) context.Context {
	k := cmp.Or(MerchantKeyFrom(ctx), processMerchantKey)
	v := &credentialsValue{c: c, headers: [2]string{c.APIKey, c.APISecret}, secrets: [2]string{c.APIKey, c.APISecret}, merchant: k.sum(c)}
	var name [2 * len(merchantKey{})]byte
	hex.Encode(name[:], v.merchant[:])
	v.merchantName = string(name[:])
	return opscope.WithValue(ctx, credentialsKey{}, v)
}

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

// CredentialsFrom returns ctx's credentials; ok is false for none or when
// either half is empty.
func CredentialsFrom(ctx context.Context) (Credentials, bool) {
	v, ok := credentialsFrom(ctx)
	return v.c, ok
}

// SecretsOf returns ctx's usable pair's values, never to be logged, traced or
// measured (read only).
func SecretsOf(ctx context.Context) []string {
	v, ok := credentialsFrom(ctx)
	if !ok {
		return nil
	}
	return v.secrets[:]
}

// credentialsFrom is ctx's value (never nil) and whether its pair is usable.
func credentialsFrom(ctx context.Context) (*credentialsValue, bool) {
	v, _ := ctx.Value(credentialsKey{}).(*credentialsValue)
	if v == nil {
		return &credentialsValue{}, false
	}
	return v, v.c.APIKey != "" && v.c.APISecret != ""
}

// The shapes of a credential (ak_test_…, sk_prod_…).
var (
	reSecret = regexp.MustCompile(`sk_(?:test|prod|live)_[A-Za-z0-9]+`)
	reAPIKey = regexp.MustCompile(`ak_(?:test|prod|live)_[A-Za-z0-9]+`)
)

// RedactCredentials rewrites anyone's credentials in s: a secret as
// "sk_…[redacted]", a key by RedactKey.
func RedactCredentials(s string) string {
	if strings.Contains(s, "sk_") {
		s = reSecret.ReplaceAllLiteralString(s, "sk_…[redacted]")
	}
	if strings.Contains(s, "ak_") {
		s = reAPIKey.ReplaceAllStringFunc(s, RedactKey)
	}
	return s
}

// RedactKey shows a key's prefix ("ak_test_…"), "[none]" if empty,
// "[redacted]" unless like "a_b_c".
func RedactKey(key string) string {
	if key == "" {
		return "[none]"
	}
	// Up to the second '_' within the first 16 bytes, letters and digits.
	underscores := 0
	for i := 0; i < len(key) && i < 16; i++ {
		switch c := key[i]; {
		case c == '_':
			underscores++
			if underscores == 2 && i+1 < len(key) { // with nothing after it, the prefix is the whole key
				return key[:i+1] + "…"
			}
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		default:
			return "[redacted]"
		}
	}
	return "[redacted]"
}

// String returns RedactKey of the key, never the secret.
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

// Format implements fmt.Formatter: every verb prints the redacted form.
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
	return slog.GroupValue(slog.String("api_key", RedactKey(c.APIKey)),
		slog.Bool("api_secret_set", c.APISecret != ""))
}

// MarshalJSON keeps encoding/json from printing the secret.
func (c Credentials) MarshalJSON() ([]byte, error) { return []byte(strconv.Quote(c.String())), nil }

// scrub replaces the credentials in msg (an upstream error) by "[redacted]".
func (c Credentials) scrub(msg string) string {
	for _, s := range [...]string{c.APISecret, c.APIKey} {
		if s != "" {
			msg = strings.ReplaceAll(msg, s, "[redacted]")
		}
	}
	return msg
}
