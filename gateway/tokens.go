package gateway

import (
	"context"
	"errors"
	"net/http"

	"paygraph/gqlhttp"
	"paygraph/restclient"
	"paygraph/sessiontoken"
)

// tokenKeys is TOKEN_KEYS' keyring, in sandbox mode else a random one; nil:
// tokens are off.
func (g *Gateway) tokenKeys(o options) *sessiontoken.Keyring {
	keys := g.cfg.TokenKeys
	if keys == nil && g.demo != nil {
		keys = sessiontoken.NewRandomKeyring()
	}
	if keys == nil {
		return nil
	}
	g.tokens = true
	if o.clock != nil {
		keys = keys.WithClock(o.clock)
	}
	return keys
}

// tokenOptions configure POST /auth/token, checking the pair with one REST
// call (a list, or the session).
func tokenOptions(cfg Config, keys *sessiontoken.Keyring, rc *restclient.Client) sessiontoken.Options {
	withPair := func(ctx context.Context, c sessiontoken.Credentials) context.Context {
		return restclient.WithRequestLimit(restclient.WithCredentials(ctx, restclient.Credentials(c)), 1)
	}
	return sessiontoken.Options{
		Keyring:         keys,
		DefaultTTL:      cfg.TokenDefaultTTL,
		MaxTTL:          cfg.TokenMaxTTL,
		MaxCustomerData: cfg.CustomerDataMax,
		KeyHeader:       restclient.HeaderAPIKey,
		SecretHeader:    restclient.HeaderAPISecret,
		WriteError:      gqlhttp.WriteError,
		Verify: func(ctx context.Context, c sessiontoken.Credentials) error {
			_, err := rc.ListPayments(withPair(ctx, c), restclient.ListParams{Limit: 1})
			return tokenCheckError(err, false)
		},
		LookupCheckoutSession: func(ctx context.Context, c sessiontoken.Credentials, idOrRef string) (sessiontoken.CheckoutSessionIDs, error) {
			s, err := rc.GetCheckoutSession(withPair(ctx, c), idOrRef)
			if err != nil {
				return sessiontoken.CheckoutSessionIDs{}, tokenCheckError(err, true)
			}
			return sessiontoken.CheckoutSessionIDs{ID: s.ID, Reference: s.Reference, PaymentID: s.PaymentID}, nil
		},
	}
}

// tokenCheckError maps a REST failure onto the token endpoint's answers
// (lookup: reading the scope's session), never passing its text on.
func tokenCheckError(err error, lookup bool) error {
	if err == nil {
		return nil
	}
	switch restclient.KindOf(err) {
	case restclient.KindUnauthorized, restclient.KindForbidden:
		return sessiontoken.ErrBadCredentials
	case restclient.KindRateLimited:
		return sessiontoken.ErrRateLimited
	case restclient.KindNotFound, restclient.KindInvalidID, restclient.KindBadRequest:
		if lookup {
			return sessiontoken.ErrNoSuchSession
		}
	case restclient.KindTimeout:
		return context.DeadlineExceeded
	}
	return errors.New("the REST API failed the credential check") // 502 UPSTREAM_ERROR
}

// chargeMint charges each mint (one REST call) to the pair's REST-call budget:
// refused, 429 RATE_LIMITED.
func chargeMint(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			if err := gqlhttp.ChargeRESTCalls(r.Context(), 1); err != nil {
				code, _ := err.Extensions["code"].(string)
				gqlhttp.WriteError(w, http.StatusTooManyRequests, code, err.Message)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}
