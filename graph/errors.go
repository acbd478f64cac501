package graph

import (
	"context"
	"errors"
	"math"
	"paygraph/graph/errcode"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"paygraph/restclient"
)

// ErrorPresenter gives every error the contract's extensions.code. Errors
// neither ours nor gqlgen's own (which carry a code) are internal: their
// text, which could hold anything, is replaced.
func ErrorPresenter(ctx context.Context, err error) *gqlerror.Error {
	gqlErr := graphql.DefaultErrorPresenter(ctx, err)
	code := errcode.Of(err)
	if code == "" {
		if _, ok := gqlErr.Extensions["code"]; ok {
			return gqlErr // gqlgen's own parse/validation/argument errors
		}
		var nested *gqlerror.Error
		switch {
		case gqlErr.Err == nil: // gqlgen's errors about the request (an unknown operation name)
			code = errcode.BadUserInput
		case errors.As(gqlErr.Err, &nested) && nested != gqlErr:
			return gqlErr
		default:
			code, gqlErr.Message = errcode.Internal, "internal error"
		}
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
		if code == errcode.RateLimited && re.RetryAfter > 0 {
			gqlErr.Extensions["retryAfter"] = int(math.Ceil(re.RetryAfter.Seconds()))
		}
	}
	return gqlErr
}
