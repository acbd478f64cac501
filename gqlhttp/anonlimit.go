// The anonymous requests' budget at the /graphql edge: requests that name
// no merchant (no credential pair, no session token) share one budget of
// the replica (issue 22).

package gqlhttp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"paygraph/graph"
	"paygraph/ratelimit"
)

// anonymousKey is the one key of the anonymous budget in its own Limiter.
const anonymousKey = "anonymous"

// AnonymousRateLimit charges each request that carries no merchant
// (merchantOf false: no credential pair and no session token, such as an
// introspection query or a request that is refused anyway) one request of
// l, a budget all such requests of this replica share
// (RATE_LIMIT_ANONYMOUS_PER_SECOND, RATE_LIMIT_ANONYMOUS_BURST). Such a
// request can make no REST call, but it was charged nothing before: 16
// anonymous senders of introspection took a merchant's p50 from 1.25 ms to
// 284 ms. Past the budget it is answered at once, as the merchant limit
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
			if onRefused != nil {
				onRefused(ctx, graph.CodeRateLimited)
			}
			// Held for its Retry-After by a RefusalDelay above, if any.
			markRefused(ctx, time.Duration(d.RetryAfterSeconds())*time.Second)
			drain(r)
			w.Header().Set("Retry-After", fmt.Sprint(d.RetryAfterSeconds()))
			body, _ := json.Marshal(map[string]any{"errors": []any{map[string]any{
				"message":    fmt.Sprintf("rate limit reached: requests without credentials share a budget and have spent it; retry after %d s, or send the merchant's credentials", d.RetryAfterSeconds()),
				"extensions": map[string]any{"code": graph.CodeRateLimited, "retryAfter": d.RetryAfterSeconds()},
			}}})
			setContentType(w, r)
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write(body)
		})
	}
}
