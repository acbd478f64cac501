package gqlhttp

import (
	"context"
	"net/http"
	"time"

	"paygraph/internal/opscope"
	"paygraph/restclient"
)

// Deadline is the middleware that gives each request its deadline
// (timeout; 0 or less: none) and its bound on REST calls in flight
// (restCalls; 0 or less: restclient.DefaultRequestLimit). A stream's
// queries get theirs in operation.go, and its server timeouts are lifted.
func Deadline(timeout time.Duration, restCalls int) func(http.Handler) http.Handler {
	if restCalls <= 0 {
		restCalls = restclient.DefaultRequestLimit
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx := r.Context()
			if isStream(r) {
				rc := http.NewResponseController(w)
				_ = rc.SetWriteDeadline(time.Time{})
				if isWebsocket(r) { // an SSE body is still read under the server's timeout
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
