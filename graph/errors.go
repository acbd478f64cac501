package graph

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"paygraph/restclient"
)

// The contract's error codes (extensions.code).
const (
	CodeUnauthenticated = "UNAUTHENTICATED"
	CodeForbidden       = "FORBIDDEN"
	CodeNotFound        = "NOT_FOUND"
	CodeBadUserInput    = "BAD_USER_INPUT"
	CodeRateLimited     = "RATE_LIMITED"
	CodeUpstreamTimeout = "UPSTREAM_TIMEOUT"
	CodeUpstreamError   = "UPSTREAM_ERROR"
	CodeInternal        = "INTERNAL_SERVER_ERROR"
)

// errPanic is the error of a recovered panic: INTERNAL_SERVER_ERROR, "internal
// error" (the panic itself is logged, never answered).
var errPanic = errors.New("internal error")

// InputError is a problem with what the caller sent (BAD_USER_INPUT).
type InputError struct{ Message string }

func (e *InputError) Error() string { return e.Message }

func inputErrorf(format string, args ...any) error {
	return &InputError{Message: fmt.Sprintf(format, args...)}
}

// ErrorCode is the contract's code for err, or "" when err carries none.
func ErrorCode(err error) string {
	var in *InputError
	if errors.As(err, &in) {
		return CodeBadUserInput
	}
	var tooLarge *ResponseTooLargeError
	if errors.As(err, &tooLarge) {
		return CodeResponseTooLarge
	}
	if _, ok := errors.AsType[*SubscriptionLimitError](err); ok {
		return CodeRateLimited
	}
	if _, ok := errors.AsType[*ScopeError](err); ok {
		return CodeForbidden
	}
	if _, ok := errors.AsType[*ResumeExpiredError](err); ok {
		return CodeEventIDExpired
	}
	var re *restclient.Error
	if !errors.As(err, &re) {
		return ""
	}
	switch re.Kind {
	case restclient.KindNotFound:
		return CodeNotFound
	case restclient.KindUnauthorized:
		return CodeUnauthenticated
	case restclient.KindForbidden:
		return CodeForbidden
	case restclient.KindRateLimited:
		return CodeRateLimited
	case restclient.KindBadRequest, restclient.KindInvalidID:
		return CodeBadUserInput
	case restclient.KindTimeout:
		return CodeUpstreamTimeout
	default:
		return CodeUpstreamError
	}
}

// ErrorPresenter gives every error the contract's extensions.code. Errors
// that are neither ours nor gqlgen's own (which already carry
// GRAPHQL_PARSE_FAILED or GRAPHQL_VALIDATION_FAILED) are internal: their
// text is replaced, since it could hold anything.
func ErrorPresenter(ctx context.Context, err error) *gqlerror.Error {
	gqlErr := graphql.DefaultErrorPresenter(ctx, err)
	code := ErrorCode(err)
	if code == "" {
		if _, ok := gqlErr.Extensions["code"]; ok {
			return gqlErr // gqlgen's own parse/validation/argument errors
		}
		if gqlErr.Err == nil {
			// gqlgen's errors about what the caller sent (a malformed APQ
			// extension, an unknown operation name) carry no code of
			// their own.
			if gqlErr.Extensions == nil {
				gqlErr.Extensions = make(map[string]any, 1)
			}
			gqlErr.Extensions["code"] = CodeBadUserInput
			return gqlErr
		}
		var nested *gqlerror.Error
		if errors.As(gqlErr.Err, &nested) && nested != gqlErr {
			return gqlErr
		}
		code = CodeInternal
		gqlErr.Message = "internal error"
	}
	if gqlErr.Extensions == nil {
		gqlErr.Extensions = make(map[string]any, 2)
	}
	gqlErr.Extensions["code"] = code
	var re *restclient.Error
	if errors.As(err, &re) {
		if re.Message != "" {
			gqlErr.Message = re.Message // the REST API's own words: "Payment not found"
		}
		if code == CodeRateLimited && re.RetryAfter > 0 {
			gqlErr.Extensions["retryAfter"] = int(math.Ceil(re.RetryAfter.Seconds()))
		}
	}
	return gqlErr
}
