package gqlhttp

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"paygraph/graph/errcode"
	"paygraph/internal/opscope"
	"paygraph/restclient"
	"paygraph/sessiontoken"
)

// The credential headers as net/http stores them.
var (
	canonicalAPIKey    = http.CanonicalHeaderKey(restclient.HeaderAPIKey)
	canonicalAPISecret = http.CanonicalHeaderKey(restclient.HeaderAPISecret)
)

type callerKey struct{}

// callerHeaders is what credential headers held that made no usable pair:
// values never to be logged.
type callerHeaders struct {
	ambiguous string   // the first credential header sent in more than one line, "" none
	values    []string // every value of every credential header
}

// Credentials is the middleware, at the top of the router and never answering,
// that reads x-api-key and x-api-secret once into the context: the pair if
// each came once, not empty, else what they held.
func Credentials(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { next.ServeHTTP(w, readCaller(r)) })
}

// SingleCredentials is the middleware that refuses (400 UNAUTHENTICATED)
// x-api-key or x-api-secret in more than one line, whose first a proxy could
// choose; it reads them if no Credentials did.
func SingleCredentials(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !callerRead(r.Context()) {
			r = readCaller(r)
		}
		h, _ := r.Context().Value(callerKey{}).(*callerHeaders)
		if h != nil && h.ambiguous != "" {
			refuse(w, r, http.StatusBadRequest, errcode.Unauthenticated,
				h.ambiguous+" was sent more than once (in more than one header line): send each credential header exactly once")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// CallerSecrets returns the values the request's credential headers held,
// which the logger and the metrics must never print (read only; nil: none).
func CallerSecrets(ctx context.Context) []string {
	if h, _ := ctx.Value(callerKey{}).(*callerHeaders); h != nil {
		return h.values
	}
	return restclient.SecretsOf(ctx) // the pair, or nil
}

// callerRead reports whether an outer Credentials read the headers into ctx.
func callerRead(ctx context.Context) bool {
	if ctx.Value(callerKey{}) != nil {
		return true
	}
	_, ok := restclient.CredentialsFrom(ctx)
	return ok
}

// readCaller returns r with what its credential headers hold, if any, in its
// context.
func readCaller(r *http.Request) *http.Request {
	ctx := r.Context()
	keys, secrets := r.Header[canonicalAPIKey], r.Header[canonicalAPISecret] // every line
	if len(keys) == 0 && len(secrets) == 0 {
		return r
	}
	// One line is one value, commas included: a secret may hold any.
	if len(keys) == 1 && len(secrets) == 1 && keys[0] != "" && secrets[0] != "" {
		pair := restclient.Credentials{APIKey: keys[0], APISecret: secrets[0]}
		return opscope.Request(r, restclient.WithCredentials(ctx, pair))
	}
	h := &callerHeaders{}
	switch {
	case len(keys) > 1:
		h.ambiguous = restclient.HeaderAPIKey
	case len(secrets) > 1:
		h.ambiguous = restclient.HeaderAPISecret
	}
	for _, v := range slices.Concat(keys, secrets) {
		if v != "" {
			h.values = append(h.values, v)
		}
		if strings.Contains(v, ",") { // and each item of a list
			for _, item := range strings.Split(v, ",") {
				if item = strings.TrimSpace(item); item != "" {
					h.values = append(h.values, item)
				}
			}
		}
	}
	return opscope.Request(r, opscope.WithValue(ctx, callerKey{}, h))
}

// BearerConfig configures Bearer with the facts it needs from their owners.
type BearerConfig struct {
	// Verify checks a token (sessiontoken.Keyring.Verify). Nil: tokens
	// are off, and a request with one is refused saying so.
	Verify func(token string) (sessiontoken.Claims, error)
	// WithScope puts the token's scope where the resolvers find it (graph.WithScope).
	WithScope               func(ctx context.Context, s sessiontoken.Scope) context.Context
	KeyHeader, SecretHeader string                                                                     // the credential headers a token replaces: sent with one, refused
	Refuse                  func(w http.ResponseWriter, r *http.Request, status int, code, msg string) // in the contract's shape
}

type bearerKey struct{}

// bearerState is what Bearer found: every Authorization value (secrets,
// even unverified: a tampered token is mostly a real one) and, if unusable, why.
type bearerState struct {
	values    []string
	refusal   string
	expiresAt time.Time // a verified token's expiry; zero otherwise
}

// Bearer returns two middlewares for "Authorization: Bearer <session token>".
// read, at the top of the router, verifies the token and puts its pair and
// scope in the context; it never answers, so that the access log sees a
// refused request. refuse, on the routes that take credentials (inside CORS),
// answers 401 UNAUTHENTICATED for an unusable token, saying why.
func Bearer(cfg BearerConfig) (read, refuse func(http.Handler) http.Handler) {
	if cfg.WithScope == nil || cfg.Refuse == nil || cfg.KeyHeader == "" || cfg.SecretHeader == "" {
		panic("gqlhttp: BearerConfig needs WithScope, Refuse, KeyHeader and SecretHeader")
	}
	keyH, secretH := http.CanonicalHeaderKey(cfg.KeyHeader), http.CanonicalHeaderKey(cfg.SecretHeader)
	read = func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			vals := r.Header["Authorization"]
			if len(vals) == 0 {
				next.ServeHTTP(w, r)
				return
			}
			st := &bearerState{values: vals}
			ctx := r.Context()
			scheme, token, _ := strings.Cut(strings.TrimSpace(vals[0]), " ")
			token = strings.TrimSpace(token)
			switch {
			case len(vals) > 1:
				st.refusal = "Authorization was sent more than once: send one Authorization: Bearer <session token>"
			case !strings.EqualFold(scheme, "Bearer") || token == "": // the scheme in any case (RFC 9110 11.1)
				st.refusal = "Authorization must be Bearer <session token>"
			case len(r.Header[keyH]) > 0 || len(r.Header[secretH]) > 0:
				st.refusal = "send either Authorization: Bearer <session token> or " + cfg.KeyHeader + " and " + cfg.SecretHeader + ", not both"
			case cfg.Verify == nil:
				st.refusal = "session tokens are off: TOKEN_KEYS is not set"
			default:
				claims, err := cfg.Verify(token)
				if err != nil {
					st.refusal = refusalOf(err)
					break
				}
				st.expiresAt = claims.ExpiresAt
				ctx = cfg.WithScope(restclient.WithCredentials(ctx, restclient.Credentials(claims.Credentials)), claims.Scope)
			}
			next.ServeHTTP(w, opscope.Request(r, opscope.WithValue(ctx, bearerKey{}, st)))
		})
	}
	refuse = func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if st, _ := r.Context().Value(bearerKey{}).(*bearerState); st != nil && st.refusal != "" {
				w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
				cfg.Refuse(w, r, http.StatusUnauthorized, errcode.Unauthenticated, st.refusal)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	return read, refuse
}

// BearerSecrets returns the Authorization values, never to be logged (nil: none).
func BearerSecrets(ctx context.Context) []string {
	if st, _ := ctx.Value(bearerKey{}).(*bearerState); st != nil {
		return st.values
	}
	return nil
}

// tokenExpiry is the expiry of the verified session token ctx's pair came from.
func tokenExpiry(ctx context.Context) (time.Time, bool) {
	if st, _ := ctx.Value(bearerKey{}).(*bearerState); st != nil && !st.expiresAt.IsZero() {
		return st.expiresAt, true
	}
	return time.Time{}, false
}

// refusalOf is a refused token's message: a known error's text (never the token), else malformed's.
func refusalOf(err error) string {
	for _, known := range []error{sessiontoken.ErrExpired, sessiontoken.ErrTampered, sessiontoken.ErrForeign, sessiontoken.ErrMalformed} {
		if errors.Is(err, known) {
			return err.Error()
		}
	}
	return sessiontoken.ErrMalformed.Error()
}
