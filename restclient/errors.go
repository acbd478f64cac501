package restclient

import (
	"cmp"
	"errors"
	"strconv"
	"time"
)

// ErrorKind classifies a failed call.
type ErrorKind int

// The kinds of failure.
const (
	KindUpstream     ErrorKind = iota // REST API down, 5xx, or an answer that is not the documented JSON
	KindNotFound                      // the resource does not exist
	KindUnauthorized                  // credentials missing (no call made) or REST 401
	KindForbidden                     // REST 403
	KindRateLimited                   // REST 429 (see Error.RetryAfter)
	KindBadRequest                    // REST 400/422 and other 4xx; invalid parameters
	KindTimeout                       // the REST API did not answer in time (408, 504, deadline)
	KindCanceled                      // the caller's context was canceled
	KindInvalidID                     // an id that cannot be a REST id; no call made
)

var kindNames = [...]string{
	KindUpstream: "upstream", KindNotFound: "not_found", KindUnauthorized: "unauthorized",
	KindForbidden: "forbidden", KindRateLimited: "rate_limited", KindBadRequest: "bad_request",
	KindTimeout: "timeout", KindCanceled: "canceled", KindInvalidID: "invalid_id",
}

// String returns a short snake_case name ("not_found"), usable as a metric label.
func (k ErrorKind) String() string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Error is the error of every failed call of Client.
type Error struct {
	Kind       ErrorKind
	Endpoint   Endpoint
	Status     int           // HTTP status, 0 when no response
	Message    string        // human message; for REST {"error": msg} bodies it is msg verbatim; never contains credentials
	RetryAfter time.Duration // from Retry-After on 429, 0 if absent
	Err        error         // underlying cause, may be nil
}

// Error returns "restclient: GET <endpoint>: <message> (HTTP <status>)",
// without Err's text.
func (e *Error) Error() string {
	s := "restclient: "
	if e.Endpoint != "" {
		s += "GET " + string(e.Endpoint) + ": "
	}
	s += cmp.Or(e.Message, e.Kind.String())
	if e.Status != 0 {
		s += " (HTTP " + strconv.Itoa(e.Status) + ")"
	}
	return s
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

func isA[E error](err error) bool {
	_, ok := errors.AsType[E](err)
	return ok
}

// KindOf returns the kind of the first *Error in err's chain, else
// KindUpstream (also for nil).
func KindOf(err error) ErrorKind {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Kind
	}
	return KindUpstream
}
