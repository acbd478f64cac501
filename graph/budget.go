package graph

import (
	"context"
	"fmt"
	"paygraph/graph/errcode"
	"sync/atomic"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// DefaultMaxResponseBytes (MAX_RESPONSE_BYTES) is 8 MiB: over 100 times
// the largest documented response (a 100-item list with every field and
// cursors is about 50 KB, 100 nodes about 45 KB), yet a request at the
// limit holds up to about 24 MiB while its response is built and written,
// a seventh of a replica's 160 MiB GOMEMLIMIT.
const DefaultMaxResponseBytes = 8 << 20

// ResponseBudget bounds the bytes one GraphQL response may build
// (MAX_RESPONSE_BYTES). The REST calls of a request are bounded by
// complexity and deduplicated by the loaders, but the output is not: 49
// aliases of nodes(ids: [100 ids]) render the same 100 records 49 times,
// and aliases of plain fields repeat a record's strings without any
// resolver running. So each resolver that returns REST data charges an
// estimate of the JSON it will render, before gqlgen renders any of it
// (see budgetcost.go), to the request's budget; past the budget the
// field fails with RESPONSE_TOO_LARGE, every later charge and every later
// REST-backed field fails at once, and the response is replaced by that
// one error. The bytes gqlgen actually built are checked once more here,
// and the POST transport checks what it writes (writeResponse), in case
// an estimate was short (JSON escaping can make a string up to six times
// longer).
type ResponseBudget struct {
	MaxBytes int64 // <= 0: no budget
}

var (
	_ graphql.HandlerExtension     = ResponseBudget{}
	_ graphql.OperationInterceptor = ResponseBudget{}
	_ graphql.ResponseInterceptor  = ResponseBudget{}
)

func (ResponseBudget) ExtensionName() string                          { return "ResponseBudget" }
func (ResponseBudget) Validate(schema graphql.ExecutableSchema) error { return nil }

// InterceptOperation gives the operation its budget, where the resolvers
// find it.
func (b ResponseBudget) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	return next(b.prepare(ctx))
}

// prepare is InterceptOperation's context for next.
func (b ResponseBudget) prepare(ctx context.Context) context.Context {
	if b.MaxBytes <= 0 {
		return ctx
	}
	// A subscription's events are answers of their own, each one REST
	// record (bounded by REST_MAX_BODY_BYTES); a budget of the whole
	// operation would run out after enough events. Each event's data is
	// still checked against MaxBytes below.
	oc := graphql.GetOperationContext(ctx)
	if !b.applies(oc) {
		return ctx
	}
	ctx, st := withOpState(ctx, oc)
	b.prepareIn(st, oc)
	return ctx
}

// applies reports whether operation oc has a budget.
func (b ResponseBudget) applies(oc *graphql.OperationContext) bool {
	return b.MaxBytes > 0 && (oc.Operation == nil || oc.Operation.Operation != ast.Subscription)
}

// prepareIn gives operation oc its budget in its state st, when it has
// one.
func (b ResponseBudget) prepareIn(st *opState, oc *graphql.OperationContext) {
	if b.applies(oc) {
		st.budgetVal.limit = b.MaxBytes
		st.budget = &st.budgetVal
	}
}

// InterceptResponse fails the whole response once the budget is spent, or
// when the data gqlgen built is over it anyway: one clear error instead
// of partial data and an error per refused field.
func (b ResponseBudget) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	return b.finish(ctx, next(ctx))
}

// finish is InterceptResponse's work on the response next returned.
func (b ResponseBudget) finish(ctx context.Context, resp *graphql.Response) *graphql.Response {
	if resp == nil || b.MaxBytes <= 0 {
		return resp
	}
	if budgetFrom(ctx).spent() || int64(len(resp.Data)) > b.MaxBytes {
		return &graphql.Response{Errors: gqlerror.List{ResponseTooLarge(b.MaxBytes)}}
	}
	return resp
}

// responseBudget is one request's: the estimated bytes charged so far.
type responseBudget struct {
	limit int64
	used  atomic.Int64
}

// budgetFrom returns the request's budget; nil (no limit) outside an
// operation that has one, such as a resolver called by a unit test.
func budgetFrom(ctx context.Context) *responseBudget {
	if st := opStateFrom(ctx); st != nil {
		return st.budget
	}
	return nil
}

// charge adds n estimated bytes; past the limit it fails, and so does
// every later charge of the request.
func (b *responseBudget) charge(n int) error {
	if b == nil || n <= 0 {
		return nil
	}
	if b.used.Add(int64(n)) > b.limit {
		return &ResponseTooLargeError{Limit: b.limit}
	}
	return nil
}

// check fails once the budget is spent: a resolver calls it before its
// REST calls, so that a request already over its budget makes no more.
func (b *responseBudget) check() error {
	if b.spent() {
		return &ResponseTooLargeError{Limit: b.limit}
	}
	return nil
}

func (b *responseBudget) spent() bool { return b != nil && b.used.Load() > b.limit }

// ResponseTooLargeError is RESPONSE_TOO_LARGE.
type ResponseTooLargeError struct{ Limit int64 }

func (*ResponseTooLargeError) ErrorCode() string { return errcode.ResponseTooLarge }

func (e *ResponseTooLargeError) Error() string {
	return fmt.Sprintf("the response would be larger than the limit of %d bytes: ask for fewer items, fields or aliases", e.Limit)
}

// ResponseTooLarge is the RESPONSE_TOO_LARGE GraphQL error of a response
// over limit bytes, for the transports' own last check.
func ResponseTooLarge(limit int64) *gqlerror.Error {
	err := &ResponseTooLargeError{Limit: limit}
	return &gqlerror.Error{Err: err, Message: err.Error(), Extensions: map[string]any{"code": errcode.ResponseTooLarge}}
}
