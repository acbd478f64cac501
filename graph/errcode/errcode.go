// Package errcode owns the contract's error codes (extensions.code) and the
// mapping from an error to its code: a Coder's own, or a REST error's kind's.
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
	if code, ok := kindCodes[re.Kind]; ok {
		return code
	}
	return UpstreamError
}

// kindCodes are the codes of the REST error kinds other than UPSTREAM_ERROR.
var kindCodes = map[restclient.ErrorKind]string{
	restclient.KindNotFound:     NotFound,
	restclient.KindUnauthorized: Unauthenticated,
	restclient.KindForbidden:    Forbidden,
	restclient.KindRateLimited:  RateLimited,
	restclient.KindBadRequest:   BadUserInput,
	restclient.KindInvalidID:    BadUserInput,
	restclient.KindTimeout:      UpstreamTimeout,
}
