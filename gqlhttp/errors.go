package gqlhttp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"paygraph/graph/errcode"
	"paygraph/internal/opscope"
)

// refusedKey is the context key of the hook OnRefused sets.
type refusedKey struct{}

// OnRefused is the middleware that tells report of each refusal below it (the
// server never sees them).
func OnRefused(report func(ctx context.Context, code string)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if report == nil {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, opscope.Request(r, opscope.WithValue(r.Context(), refusedKey{}, report)))
		})
	}
}

// refuse answers r with a GraphQL-shaped error, reported to OnRefused; msg
// never echoes the caller.
func refuse(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	reportRefused(r, code)
	WriteErrorFor(w, r, status, code, msg)
}

// refuseBody answers a body that could not be read: 413 past the limit, else 400.
func refuseBody(w http.ResponseWriter, r *http.Request, err error) {
	status, msg := http.StatusBadRequest, "could not read the request body"
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		status, msg = http.StatusRequestEntityTooLarge, "request body is larger than the limit"
	}
	refuse(w, r, status, errcode.BadUserInput, msg)
}

// msgNotObject refuses a body that is not one GraphQL request.
const msgNotObject = `request body must be a JSON object {"query": string, "operationName": string, "variables": object, "extensions": object}`

func reportRefused(r *http.Request, code string) {
	if report, _ := r.Context().Value(refusedKey{}).(func(context.Context, string)); report != nil {
		report(r.Context(), code)
	}
}

// WriteError answers with a GraphQL-shaped error body, running no operation.
func WriteError(w http.ResponseWriter, status int, code, msg string) {
	w.Header()["Content-Type"] = contentTypeJSON
	w.WriteHeader(status)
	_, _ = w.Write(errorBody(code, msg))
}

// WriteErrorFor is WriteError in the media type r negotiated.
func WriteErrorFor(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	setContentType(w, r)
	w.WriteHeader(status)
	_, _ = w.Write(errorBody(code, msg))
}

// errorBody is {"errors":[{"message":msg,"extensions":{"code":code}}]}.
func errorBody(code, msg string) []byte {
	b, _ := json.Marshal(map[string]any{"errors": []any{map[string]any{
		"message": msg, "extensions": map[string]string{"code": code}}}})
	return b
}
