package gqlhttp

import (
	"context"
	"net/http"
	"paygraph/graph/errcode"
	"strings"

	"paygraph/internal/opscope"
	"paygraph/restclient"
)

// The credential headers as net/http stores them.
var (
	canonicalAPIKey    = http.CanonicalHeaderKey(restclient.HeaderAPIKey)
	canonicalAPISecret = http.CanonicalHeaderKey(restclient.HeaderAPISecret)
)

type callerKey struct{}

// callerHeaders is what credential headers held when they did not make one
// usable pair: nothing to send, but values that must never be logged.
type callerHeaders struct {
	ambiguous string   // the first credential header sent in more than one line, "" none
	values    []string // every value of every credential header
}

// Credentials is the middleware, at the top of the router, that reads the
// caller's x-api-key and x-api-secret once into the request's context: the
// pair when each was sent once and neither is empty, else what the headers
// held, for CallerSecrets. It never answers.
func Credentials(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ctx, changed := readCaller(r); changed {
			r = opscope.Request(r, ctx)
		}
		next.ServeHTTP(w, r)
	})
}

// SingleCredentials is the middleware that refuses, UNAUTHENTICATED (HTTP
// 400), a request whose x-api-key or x-api-secret came in more than one
// line: taking the first would let a proxy's added header choose the
// merchant. It reads the headers itself when no outer Credentials did.
func SingleCredentials(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, _ := r.Context().Value(callerKey{}).(*callerHeaders)
		if !callerRead(r.Context()) {
			if ctx, changed := readCaller(r); changed {
				r = opscope.Request(r, ctx)
				h, _ = ctx.Value(callerKey{}).(*callerHeaders)
			}
		}
		if h != nil && h.ambiguous != "" {
			refuse(w, r, http.StatusBadRequest, errcode.Unauthenticated,
				h.ambiguous+" was sent more than once (in more than one header line): send each credential header exactly once")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// CallerSecrets returns the values the request's credential headers held,
// which the logger and the metrics must never print. Nil without any.
// Read only.
func CallerSecrets(ctx context.Context) []string {
	if h, _ := ctx.Value(callerKey{}).(*callerHeaders); h != nil {
		return h.values
	}
	return restclient.SecretsOf(ctx) // the pair, or nil
}

// callerRead reports whether an outer Credentials already read the
// headers into ctx.
func callerRead(ctx context.Context) bool {
	if ctx.Value(callerKey{}) != nil {
		return true
	}
	_, ok := restclient.CredentialsFrom(ctx)
	return ok
}

// readCaller returns r's context with what r's credential headers hold,
// and whether it differs from r's (not when there are none).
func readCaller(r *http.Request) (context.Context, bool) {
	ctx := r.Context()
	keys, secrets := r.Header[canonicalAPIKey], r.Header[canonicalAPISecret] // every line
	if len(keys) == 0 && len(secrets) == 0 {
		return ctx, false
	}
	// One line is one value, commas included: a secret may hold any.
	if len(keys) == 1 && len(secrets) == 1 && keys[0] != "" && secrets[0] != "" {
		return restclient.WithCredentials(ctx, restclient.Credentials{APIKey: keys[0], APISecret: secrets[0]}), true
	}
	h := &callerHeaders{}
	switch {
	case len(keys) > 1:
		h.ambiguous = restclient.HeaderAPIKey
	case len(secrets) > 1:
		h.ambiguous = restclient.HeaderAPISecret
	}
	for _, vs := range [...][]string{keys, secrets} {
		for _, v := range vs {
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
	}
	return opscope.WithValue(ctx, callerKey{}, h), true
}
