package gqlhttp

import (
	"context"
	"net/http"
	"paygraph/graph/errcode"
	"strings"

	"paygraph/internal/opscope"
	"paygraph/restclient"
)

// The credential headers are read once per request, by Credentials at the
// top of the router, so that every layer of the request knows the pair:
// the REST client sends it, and the access log (which runs outside the
// /graphql route) takes it out of its line, request id and operation name
// included. SingleCredentials, on the route, refuses ambiguous ones (and
// reads them itself when no outer Credentials did).

// The credential headers as net/http stores them (the keys of
// http.Header), computed once rather than per request.
var (
	canonicalAPIKey    = http.CanonicalHeaderKey(restclient.HeaderAPIKey)
	canonicalAPISecret = http.CanonicalHeaderKey(restclient.HeaderAPISecret)
)

// callerKey is the context key of a callerHeaders.
type callerKey struct{}

// callerHeaders is what credential headers held when they did not make one
// usable pair (one or both missing, or sent more than once): nothing to
// send to the REST API, but values that still must never be logged.
type callerHeaders struct {
	ambiguous string   // the first credential header sent in more than one line, "" none
	values    []string // every value of every credential header
}

// Credentials is the middleware that reads the caller's x-api-key and
// x-api-secret. When each was sent once and neither is empty, it puts the
// pair in the request's context, where the REST client takes it
// (restclient.WithCredentials); otherwise it puts there what the headers
// held, for CallerSecrets, and the /graphql route answers: missing
// headers make every REST-backed field UNAUTHENTICATED (introspection
// still works), duplicated ones are refused by SingleCredentials. It never
// answers itself, so that it can run first, before the access log.
func Credentials(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ctx, changed := readCaller(r); changed {
			r = opscope.Request(r, ctx)
		}
		next.ServeHTTP(w, r)
	})
}

// SingleCredentials is the middleware that refuses, before any REST call,
// a request whose x-api-key or x-api-secret came in more than one header
// line: which one
// the caller meant is unknown, and taking the first (what net/http's
// Header.Get does) would let a proxy's added header or a client bug choose
// the merchant. UNAUTHENTICATED (HTTP 400), as for credentials that are
// missing: the request has no usable pair. The message names the header,
// never its values. It reads the headers itself when no outer Credentials
// did.
func SingleCredentials(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// callerRead, and what it read, in one look-up of each key (the
		// usual request: a pair an outer Credentials read, one miss).
		ctx := r.Context()
		h, _ := ctx.Value(callerKey{}).(*callerHeaders)
		if h == nil {
			if _, paired := restclient.CredentialsFrom(ctx); !paired {
				if ctx, changed := readCaller(r); changed {
					r = opscope.Request(r, ctx)
					h, _ = ctx.Value(callerKey{}).(*callerHeaders)
				}
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

// CallerSecrets returns the values the request's credential headers held
// (the pair, or every value when they were not one usable pair): the
// literal strings the logger and the metrics must never print, whatever
// their shape. Nil outside a request or without credential headers. Read
// only: the slice is the request's own (no allocation per call).
func CallerSecrets(ctx context.Context) []string {
	if h, _ := ctx.Value(callerKey{}).(*callerHeaders); h != nil {
		return h.values
	}
	return restclient.SecretsOf(ctx) // the pair, or nil
}

// callerRead reports whether an outer Credentials already read the
// headers into ctx. (When there were none it left nothing: reading them
// again finds nothing again.)
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
	// Direct map reads: Header.Get would canonicalise the name, and would
	// hide a second line.
	keys, secrets := r.Header[canonicalAPIKey], r.Header[canonicalAPISecret]
	if len(keys) == 0 && len(secrets) == 0 {
		return ctx, false
	}
	if len(keys) == 1 && len(secrets) == 1 && single(keys[0]) && single(secrets[0]) {
		return restclient.WithCredentials(ctx, restclient.Credentials{APIKey: keys[0], APISecret: secrets[0]}), true
	}
	h := &callerHeaders{}
	switch {
	case ambiguous(keys):
		h.ambiguous = restclient.HeaderAPIKey
	case ambiguous(secrets):
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

// single reports whether v is one non-empty credential. One header line
// is one value, commas included: a secret may hold any visible character
// ("sk gamma/+=;,secret~\"x" is one secret), and is forwarded unchanged.
// (A proxy that joins two lines into "a, b" makes a pair the REST API
// refuses: no merchant is chosen for the caller either way.)
func single(v string) bool {
	return v != ""
}

// ambiguous reports whether a credential header came as more than one
// line.
func ambiguous(vs []string) bool {
	return len(vs) > 1
}
