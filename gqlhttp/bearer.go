package gqlhttp

import (
	"context"
	"errors"
	"net/http"
	"paygraph/graph/errcode"
	"strings"
	"time"

	"paygraph/internal/opscope"
	"paygraph/restclient"
	"paygraph/sessiontoken"
)

// BearerConfig configures Bearer with the facts it needs from their owners.
type BearerConfig struct {
	// Verify checks a token (sessiontoken.Keyring.Verify). Nil: tokens
	// are off, and a request with one is refused saying so.
	Verify func(token string) (sessiontoken.Claims, error)
	// WithScope puts the token's scope where the resolvers find it
	// (graph.WithScope).
	WithScope func(ctx context.Context, s sessiontoken.Scope) context.Context
	// KeyHeader and SecretHeader are the credential headers a token
	// replaces; a request with either and a token is refused.
	KeyHeader, SecretHeader string
	// Refuse answers a refused request in the contract's shape.
	Refuse func(w http.ResponseWriter, r *http.Request, status int, code, msg string)
}

type bearerKey struct{}

// bearerState is what Bearer found: every Authorization value (secrets,
// verified or not: a tampered token is mostly a real one) and, when the
// token cannot be used, why.
type bearerState struct {
	values    []string
	refusal   string
	expiresAt time.Time // a verified token's expiry; zero otherwise
}

// Bearer returns two middlewares for "Authorization: Bearer <session
// token>". read, at the top of the router, verifies the token and puts its
// pair in the context as the two headers do, its scope beside it; it never
// answers, so that the access log still sees a refused request. refuse, on
// the routes that take credentials (inside CORS), answers 401
// UNAUTHENTICATED for a token that cannot be used, saying why.
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
			token, isBearer := bearerToken(vals[0])
			switch {
			case len(vals) > 1:
				st.refusal = "Authorization was sent more than once: send one Authorization: Bearer <session token>"
			case !isBearer:
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
				ctx = restclient.WithCredentials(ctx, restclient.Credentials(claims.Credentials))
				ctx = cfg.WithScope(ctx, claims.Scope)
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

// BearerSecrets returns the request's Authorization values, valid or not,
// which the logger and metrics must never print. Nil without one.
func BearerSecrets(ctx context.Context) []string {
	if st, _ := ctx.Value(bearerKey{}).(*bearerState); st != nil {
		return st.values
	}
	return nil
}

// tokenExpiry is the expiry of the verified session token ctx's
// credentials came from; ok false when they did not come from one.
func tokenExpiry(ctx context.Context) (time.Time, bool) {
	if st, _ := ctx.Value(bearerKey{}).(*bearerState); st != nil && !st.expiresAt.IsZero() {
		return st.expiresAt, true
	}
	return time.Time{}, false
}

// bearerToken takes the token out of "Bearer <token>" (the scheme in any
// case, RFC 9110 section 11.1).
func bearerToken(v string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(v), " ")
	token = strings.TrimSpace(token)
	return token, ok && strings.EqualFold(scheme, "Bearer") && token != ""
}

// refusalOf is the message of a token Verify refused: its own text for the
// known errors (never holding the token), else malformed's.
func refusalOf(err error) string {
	for _, known := range []error{sessiontoken.ErrExpired, sessiontoken.ErrTampered, sessiontoken.ErrForeign, sessiontoken.ErrMalformed} {
		if errors.Is(err, known) {
			return err.Error()
		}
	}
	return sessiontoken.ErrMalformed.Error()
}
