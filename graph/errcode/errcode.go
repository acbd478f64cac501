// Package errcode owns the contract's error codes (extensions.code) and the
// one mapping from an error to its code: an error of the gateway's carries
// its code by implementing Coder; a REST call's error gets the code of its
// kind.
package errcode

import (
	"errors"
	"fmt"

	"paygraph/restclient"
)

// The contract's error codes.
const (
	Unauthenticated  = "UNAUTHENTICATED"
	Forbidden        = "FORBIDDEN"
	NotFound         = "NOT_FOUND"
	BadUserInput     = "BAD_USER_INPUT"
	RateLimited      = "RATE_LIMITED"
	UpstreamTimeout  = "UPSTREAM_TIMEOUT"
	UpstreamError    = "UPSTREAM_ERROR"
	Internal         = "INTERNAL_SERVER_ERROR"
	DepthLimit       = "DEPTH_LIMIT_EXCEEDED"
	FieldLimit       = "FIELD_LIMIT_EXCEEDED"
	QueryLengthLimit = "QUERY_TOO_LARGE"
	ComplexityLimit  = "COMPLEXITY_LIMIT_EXCEEDED"
	ResponseTooLarge = "RESPONSE_TOO_LARGE"
	EventIDExpired   = "EVENT_ID_EXPIRED"
)

// Coder is an error that carries its contract code.
type Coder interface {
	error
	ErrorCode() string
}

// InputError is a problem with what the caller sent (BAD_USER_INPUT).
type InputError struct{ Message string }

func (e *InputError) Error() string     { return e.Message }
func (e *InputError) ErrorCode() string { return BadUserInput }

// Inputf is an InputError with a formatted message.
func Inputf(format string, args ...any) error {
	return &InputError{Message: fmt.Sprintf(format, args...)}
}

// Of is the contract's code for err, or "" when err carries none.
func Of(err error) string {
	if c, ok := errors.AsType[Coder](err); ok {
		return c.ErrorCode()
	}
	re, ok := errors.AsType[*restclient.Error](err)
	if !ok {
		return ""
	}
	switch re.Kind {
	case restclient.KindNotFound:
		return NotFound
	case restclient.KindUnauthorized:
		return Unauthenticated
	case restclient.KindForbidden:
		return Forbidden
	case restclient.KindRateLimited:
		return RateLimited
	case restclient.KindBadRequest, restclient.KindInvalidID:
		return BadUserInput
	case restclient.KindTimeout:
		return UpstreamTimeout
	default:
		return UpstreamError
	}
}
