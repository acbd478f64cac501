package gqlhttp

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"paygraph/graph/errcode"
	"paygraph/internal/opscope"
	"paygraph/restclient"
)

// Deadline is the middleware that gives each request its deadline (timeout; <=
// 0: none) and REST calls in flight (restCalls; <= 0: the default); a stream's
// are operation.go's, its server timeouts lifted.
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

// RequestSize is the middleware that bounds the request body at maxBytes: one
// announced larger, or of unknown length (read here) and larger, is refused
// 413; any other is read through MaxBytesReader.
func RequestSize(maxBytes int64) func(http.Handler) http.Handler {
	maxBytes = max(maxBytes, 0)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.ContentLength > maxBytes {
				refuse(w, r, http.StatusRequestEntityTooLarge, errcode.BadUserInput,
					fmt.Sprintf("request body is %d bytes, more than the limit of %d", r.ContentLength, maxBytes))
				return
			}
			if r.ContentLength < 0 && r.Body != nil && r.Body != http.NoBody {
				body, err := io.ReadAll(io.LimitReader(r.Body, maxBytes+1))
				if err != nil || int64(len(body)) > maxBytes {
					refuse(w, r, http.StatusRequestEntityTooLarge, errcode.BadUserInput,
						fmt.Sprintf("request body is larger than the limit of %d bytes", maxBytes))
					return
				}
				r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
			} else {
				r.Body = http.MaxBytesReader(w, r.Body, maxBytes)
			}
			next.ServeHTTP(w, r)
		})
	}
}
