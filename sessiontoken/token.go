package sessiontoken

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"aidanwoods.dev/go-paseto"
)

// Prefix starts every token: the PASETO version and purpose.
const Prefix = "v4.local."

// Bounds checked before any work; Mint refuses longer credentials, so every token it makes fits.
const (
	MaxTokenBytes      = 2048
	MaxCredentialBytes = 256
)

// implicit is PASETO v4's implicit assertion (authenticated, never written):
// it binds a token to this use and versions the claims (v2 has the
// customer-data level: older replicas refuse it; v1 reads at the default).
var (
	implicit   = []byte("paygraph session token v2")
	implicitV1 = []byte("paygraph session token v1")
)

// The errors of Verify (test with errors.Is), never showing any part of the token.
var (
	ErrMalformed = errors.New("session token is malformed")                            // not a v4.local token
	ErrForeign   = errors.New("session token was not made with a key of this gateway") // well-formed
	ErrTampered  = errors.New("session token was modified: its authentication failed") // made with a key we hold
	ErrExpired   = errors.New("session token has expired")                             // genuine, but expired
)

// Credentials is the pair a token carries (convertible to
// restclient.Credentials), printed "[redacted]".
type Credentials struct {
	APIKey, APISecret string
}

const redacted = "[redacted]"

// String returns "[redacted]".
func (Credentials) String() string { return redacted }

// GoString returns a %#v form without either value.
func (Credentials) GoString() string {
	return `sessiontoken.Credentials{APIKey:"[redacted]", APISecret:"[redacted]"}`
}

// Format makes every fmt verb print "[redacted]" (%#v: GoString).
func (c Credentials) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		_, _ = io.WriteString(f, c.GoString())
		return
	}
	_, _ = io.WriteString(f, redacted)
}

// LogValue implements slog.LogValuer.
func (Credentials) LogValue() slog.Value { return slog.StringValue(redacted) }

// MarshalJSON keeps encoding/json from printing either value.
func (Credentials) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }

// Claims is what a verified token says.
type Claims struct {
	Credentials Credentials // the merchant's pair, to forward to the REST API
	Scope       Scope       // what the token may read
	ExpiresAt   time.Time
	Merchant    string // MerchantOf the API key, for rate limits and metrics
}

// MerchantOf is a stable, one-way name of apiKey's merchant ("m_" and 16 hex
// digits of a SHA-256 of it).
func MerchantOf(apiKey string) string {
	h := sha256.Sum256([]byte("paygraph merchant\x00" + apiKey))
	return "m_" + hex.EncodeToString(h[:8])
}

// payload is the encrypted part of a token, the only place the pair exists.
type payload struct {
	Exp      time.Time           `json:"exp"` // PASETO's registered claims
	Iat      time.Time           `json:"iat"`
	Key      string              `json:"key"`
	Secret   string              `json:"secret"`
	Scope    scopeJSON           `json:"scope"`
	IDs      *CheckoutSessionIDs `json:"session,omitempty"`     // a checkout scope's session, when pinned at minting
	Customer CustomerData        `json:"customerData,omitzero"` // required in v2 tokens
}

// Mint seals a token for creds and scope with the first key, expiring ttl (in
// ms) from now; it checks no pair.
func (k *Keyring) Mint(creds Credentials, scope Scope, ttl time.Duration) (token string, expiresAt time.Time, err error) {
	if creds.APIKey == "" || creds.APISecret == "" {
		return "", time.Time{}, errors.New("sessiontoken: both credentials are needed")
	}
	if len(creds.APIKey) > MaxCredentialBytes || len(creds.APISecret) > MaxCredentialBytes {
		return "", time.Time{}, fmt.Errorf("sessiontoken: a credential is longer than %d bytes", MaxCredentialBytes)
	}
	if ttl < time.Millisecond {
		return "", time.Time{}, errors.New("sessiontoken: a token must live at least 1ms")
	}
	if _, err := NewScope(scope.kind, scope.id); err != nil {
		return "", time.Time{}, fmt.Errorf("sessiontoken: %w", err)
	}
	now := k.now().UTC()
	expiresAt = now.Add(ttl).Truncate(time.Millisecond)
	p := payload{Exp: expiresAt, Iat: now.Truncate(time.Millisecond), Key: creds.APIKey, Secret: creds.APISecret,
		Scope: scopeJSON{Kind: scope.kind, ID: scope.id}, Customer: scope.CustomerData()}
	if ids, ok := scope.facts.get(); ok {
		p.IDs = &ids
	}
	claims, err := json.Marshal(p)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("sessiontoken: %w", err)
	}
	signer := &k.keys[0]
	t, err := paseto.NewTokenFromClaimsJSON(claims, signer.footer)
	if err != nil {
		return "", time.Time{}, errors.New("sessiontoken: claims refused by paseto") // never the claims: they hold the secret
	}
	return t.V4Encrypt(signer.key, implicit), expiresAt, nil
}

// Verify checks token (only byte for byte as Mint made it) and returns its claims with a Scope of
// its own, refusing, in this order, ErrMalformed, ErrForeign, ErrTampered and ErrExpired.
func (k *Keyring) Verify(token string) (Claims, error) {
	footer, err := splitToken(token)
	if err != nil {
		return Claims{}, err
	}
	i := slices.IndexFunc(k.keys, func(r ringKey) bool { return string(r.footer) == string(footer) })
	if i < 0 {
		var f footerJSON
		if json.Unmarshal(footer, &f) == nil && strings.HasPrefix(f.KID, "k4.lid.") {
			return Claims{}, fmt.Errorf("%w (its key id is not in TOKEN_KEYS)", ErrForeign)
		}
		return Claims{}, fmt.Errorf("%w: its footer names no key", ErrMalformed)
	}
	// Expiry is checked below against k.now, so the parser has no rules.
	parser := paseto.NewParserWithoutExpiryCheck()
	v1 := false
	t, err := parser.ParseV4Local(k.keys[i].key, token, implicit)
	if err != nil {
		if t, err = parser.ParseV4Local(k.keys[i].key, token, implicitV1); err != nil {
			return Claims{}, ErrTampered
		}
		v1 = true
	}
	var p payload
	if err := json.Unmarshal(t.ClaimsJSON(), &p); err != nil || p.Exp.IsZero() || p.Key == "" || p.Secret == "" ||
		(p.Customer == 0) != v1 {
		// Authentic but not our claims: something else sealed with our key.
		return Claims{}, fmt.Errorf("%w: its claims are not a session token's", ErrMalformed)
	}
	scope, err := NewScope(p.Scope.Kind, p.Scope.ID)
	scope = scope.WithCustomerData(p.Customer) // v1: the kind's default
	if err == nil && p.IDs != nil {
		scope, err = scope.withSession(*p.IDs)
	}
	if err != nil {
		return Claims{}, fmt.Errorf("%w: its scope is not valid", ErrMalformed)
	}
	if now := k.now(); !now.Before(p.Exp) {
		return Claims{}, fmt.Errorf("%w at %s", ErrExpired, p.Exp.UTC().Format(DateTimeLayout))
	}
	creds := Credentials{APIKey: p.Key, APISecret: p.Secret}
	return Claims{Credentials: creds, Scope: scope, ExpiresAt: p.Exp, Merchant: MerchantOf(p.Key)}, nil
}

// DateTimeLayout is the contract's DateTime: UTC, milliseconds, "Z".
const DateTimeLayout = "2006-01-02T15:04:05.000Z"

// splitToken checks the token's shape ("v4.local.<payload>.<footer>", strict
// unpadded base64url: one spelling per token) and returns its decoded footer.
func splitToken(token string) ([]byte, error) {
	if len(token) > MaxTokenBytes {
		return nil, fmt.Errorf("%w: longer than %d bytes", ErrMalformed, MaxTokenBytes)
	}
	rest, ok := strings.CutPrefix(token, Prefix)
	if !ok {
		return nil, fmt.Errorf("%w: it does not start with %q", ErrMalformed, Prefix)
	}
	body, foot, ok := strings.Cut(rest, ".")
	if !ok || body == "" || foot == "" || !isBase64URL(body) || !isBase64URL(foot) {
		return nil, fmt.Errorf("%w: not <payload>.<footer> in base64url after %q", ErrMalformed, Prefix)
	}
	b := base64.RawURLEncoding.Strict()
	if b.DecodedLen(len(body)) < 64 { // a 32-byte nonce and a 32-byte tag
		return nil, fmt.Errorf("%w: its payload is too short", ErrMalformed)
	}
	if _, err := b.DecodeString(body); err != nil {
		return nil, fmt.Errorf("%w: its payload is not base64url", ErrMalformed)
	}
	footer, err := b.DecodeString(foot)
	if err != nil {
		return nil, fmt.Errorf("%w: its footer is not base64url", ErrMalformed)
	}
	return footer, nil
}

// isBase64URL tells whether s holds only the unpadded base64url (and REST id) alphabet.
func isBase64URL(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
