package gqlhttp

import (
	"context"
	"net/http"
	"time"

	"paygraph/internal/opscope"
	"paygraph/restclient"
)

// Deadline is the middleware that gives each request its two budgets, in
// one copy of the request: the deadline of the whole request, REST calls
// included (timeout; 0 or less: none but the client's own), and the bound
// on the REST calls it has in flight at once (restCalls, the REST client's
// limiter applies it to every call made for the request:
// restclient.WithRequestLimit; 0 or less: restclient.DefaultRequestLimit).
// A stream (an SSE subscription, a WebSocket) gets no deadline here (each
// of its queries gets one from the operation scope, operation.go), and the
// server's read and write timeouts are lifted from its connection: it
// lasts as long as its subscriptions, which the subscription hub bounds
// (a subscription's longest life); the keep-alives find a client that left.
func Deadline(timeout time.Duration, restCalls int) func(http.Handler) http.Handler {
	if restCalls <= 0 {
		restCalls = restclient.DefaultRequestLimit
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx := r.Context()
			if isStream(r) {
				rc := http.NewResponseController(w)
				_ = rc.SetWriteDeadline(time.Time{}) // not every writer supports it (tests'): then there is none
				if isWebsocket(r) {                  // an SSE body is still read under the server's timeout
					_ = rc.SetReadDeadline(time.Time{})
				}
			} else if timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = opscope.WithTimeout(ctx, timeout)
				defer cancel()
			}
			next.ServeHTTP(w, opscope.Request(r, restclient.WithRequestLimit(ctx, restCalls)))
		})
	}
}
