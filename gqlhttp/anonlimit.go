// The anonymous requests' budgets at the /graphql edge: requests that
// name no merchant the REST API has accepted (no credential pair, no
// session token, or a pair no REST call has proven yet) are charged to
// their client address's budget first, then to one budget the whole
// replica shares (issues 22 and 37).

package gqlhttp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"time"

	"paygraph/graph"
	"paygraph/ratelimit"
	"paygraph/restclient"
)

// anonymousKey is the one key of the anonymous budget in its own Limiter.
const anonymousKey = "anonymous"

// AnonymousRateLimit charges each request that carries no merchant
// (merchantOf false: restclient.Client.Merchant, so no credential pair and
// no session token, or a pair the REST API has not accepted yet, whatever
// the request does: introspection, a dry run, a query of REST calls) one
// request of l, a budget all such requests of this replica share
// (RATE_LIMIT_ANONYMOUS_PER_SECOND, its burst twice it): a pair
// costs nothing to invent, so it must buy nothing that no pair would not.
// Past the budget it is answered at once, as the merchant limit
// answers (HTTP 429, RATE_LIMITED with extensions.retryAfter, its body
// unread), and never touches a merchant's budget. Preflights (OPTIONS)
// pass uncharged, and so does every request that names a merchant (its
// own RateLimit charges it). It must run after the middleware that reads
// the credentials. A nil Limiter charges nothing.
func AnonymousRateLimit(l *ratelimit.Limiter, merchantOf func(context.Context) (string, bool), onRefused func(ctx context.Context, code string)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if l == nil {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx := r.Context()
			if _, ok := merchantOf(ctx); ok || r.Method == http.MethodOptions {
				next.ServeHTTP(w, r)
				return
			}
			d := l.Allow(ctx, anonymousKey, 0)
			if d.Allowed {
				next.ServeHTTP(w, r)
				return
			}
			refuseAnonymous(w, r, d, onRefused, fmt.Sprintf("rate limit reached: requests %s share a budget and have spent it; retry after %d s", anonymousWho(ctx), d.RetryAfterSeconds()))
		})
	}
}

// AnonymousAddressRateLimit charges each request without a merchant (as
// AnonymousRateLimit: merchantOf false, not a preflight) one request of
// its client address's budget in l (RATE_LIMIT_ANONYMOUS_PER_ADDRESS_*),
// and refuses it as AnonymousRateLimit does past it. It runs before
// (outside) AnonymousRateLimit, so that a request refused here spends
// nothing of the replica's shared budget: one address flooding
// introspection then gets its own few documents a second and leaves the
// shared budget to every other address (issue 22, item 4). The address is
// ClientAddr's (the peer, or the forwarded address when the peer is one of
// trusted, TRUSTED_PROXIES), keyed as restclient.AddressKey (IPv6 by its
// /64). l is kept in this process's memory only (never Redis), so the
// address never leaves it; l's local store bounds the addresses it holds.
// A nil Limiter charges nothing.
func AnonymousAddressRateLimit(l *ratelimit.Limiter, trusted []netip.Prefix, merchantOf func(context.Context) (string, bool), onRefused func(ctx context.Context, code string)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if l == nil {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx := r.Context()
			// A WebSocket upgrade passes uncharged here: a browser cannot
			// set headers on it, so the merchant dashboard's socket is
			// anonymous until its connection_init, and an office's
			// browsers behind one NAT address would spend this budget
			// opening their dashboards. The upgrade stays charged to the
			// shared budget below and bounded by the live connections cap, and
			// the socket can do nothing until a connection_init with
			// credentials (4403 without, the init timeout).
			if _, ok := merchantOf(ctx); ok || r.Method == http.MethodOptions || isWebsocket(r) {
				next.ServeHTTP(w, r)
				return
			}
			d := l.Allow(ctx, restclient.AddressKey(ClientAddr(r, trusted)), 0)
			if d.Allowed {
				next.ServeHTTP(w, r)
				return
			}
			refuseAnonymous(w, r, d, onRefused, fmt.Sprintf("rate limit reached: requests %s from this address have spent its budget; retry after %d s", anonymousWho(ctx), d.RetryAfterSeconds()))
		})
	}
}

// anonymousWho names the anonymous requests in a refusal's message.
func anonymousWho(ctx context.Context) string {
	if _, ok := restclient.CredentialsFrom(ctx); ok {
		return "with credentials the REST API has not accepted yet"
	}
	return "without credentials"
}

// refuseAnonymous answers a request an anonymous budget refused (d): 429,
// RATE_LIMITED with extensions.retryAfter and Retry-After, its body
// unread, and marked for a RefusalDelay above to hold.
func refuseAnonymous(w http.ResponseWriter, r *http.Request, d ratelimit.Decision, onRefused func(ctx context.Context, code string), message string) {
	ctx := r.Context()
	if onRefused != nil {
		onRefused(ctx, graph.CodeRateLimited)
	}
	// Held for its Retry-After by a RefusalDelay above, if any.
	markRefused(ctx, time.Duration(d.RetryAfterSeconds())*time.Second)
	drain(r)
	w.Header().Set("Retry-After", fmt.Sprint(d.RetryAfterSeconds()))
	body, _ := json.Marshal(map[string]any{"errors": []any{map[string]any{
		"message":    message,
		"extensions": map[string]any{"code": graph.CodeRateLimited, "retryAfter": d.RetryAfterSeconds()},
	}}})
	setContentType(w, r)
	w.WriteHeader(http.StatusTooManyRequests)
	_, _ = w.Write(body)
}
