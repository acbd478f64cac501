// Package budget bounds the bytes one GraphQL response may build
// (MAX_RESPONSE_BYTES), which complexity does not: aliases render the same
// records many times. Each resolver of REST data charges an estimate of
// the JSON it will render (cost.go) before gqlgen renders it; past the
// budget the field, every later charge and the response fail with
// RESPONSE_TOO_LARGE. Limit.Finish and the transports check the bytes
// built too, in case an estimate was short (JSON escaping).
package budget

import (
	"fmt"
	"sync/atomic"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"paygraph/graph/errcode"
)

// DefaultMaxResponseBytes (MAX_RESPONSE_BYTES) is 8 MiB: over 100 times the
// largest documented response, a small part of a replica's GOMEMLIMIT.
const DefaultMaxResponseBytes = 8 << 20

// Limit is the deployment's bound; MaxBytes <= 0: no budget.
type Limit struct{ MaxBytes int64 }

// Start sets up b as the budget of operation oc and returns it, or nil
// when oc has none: a subscription, whose events Finish checks one by one.
func (l Limit) Start(b *Budget, oc *graphql.OperationContext) *Budget {
	if !l.Applies(oc) {
		return nil
	}
	b.limit = l.MaxBytes
	return b
}

// Applies reports whether operation oc has a budget.
func (l Limit) Applies(oc *graphql.OperationContext) bool {
	return l.MaxBytes > 0 && (oc.Operation == nil || oc.Operation.Operation != ast.Subscription)
}

// Finish replaces the response by one error once b is spent or its data is over the limit.
func (l Limit) Finish(b *Budget, resp *graphql.Response) *graphql.Response {
	if resp != nil && l.MaxBytes > 0 && (b.Spent() || int64(len(resp.Data)) > l.MaxBytes) {
		return &graphql.Response{Errors: gqlerror.List{TooLarge(l.MaxBytes)}}
	}
	return resp
}

// Budget is one operation's estimated bytes charged; a nil *Budget (no limit) accepts all.
type Budget struct {
	limit int64
	used  atomic.Int64
}

// Charge adds n estimated bytes; past the limit it fails, as every later charge does.
func (b *Budget) Charge(n int) error {
	if b == nil || n <= 0 {
		return nil
	}
	if b.used.Add(int64(n)) > b.limit {
		return &TooLargeError{Limit: b.limit}
	}
	return nil
}

// Check fails once the budget is spent, so a resolver makes no more REST calls.
func (b *Budget) Check() error {
	if b.Spent() {
		return &TooLargeError{Limit: b.limit}
	}
	return nil
}

// Used is the bytes charged so far.
func (b *Budget) Used() int64 { return b.used.Load() }

// Spent reports whether the budget is spent.
func (b *Budget) Spent() bool { return b != nil && b.used.Load() > b.limit }

// TooLargeError is RESPONSE_TOO_LARGE.
type TooLargeError struct{ Limit int64 }

func (*TooLargeError) ErrorCode() string { return errcode.ResponseTooLarge }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("the response would be larger than the limit of %d bytes: ask for fewer items, fields or aliases", e.Limit)
}

// TooLarge is the RESPONSE_TOO_LARGE error of a response over limit bytes.
func TooLarge(limit int64) *gqlerror.Error {
	err := &TooLargeError{Limit: limit}
	return &gqlerror.Error{Err: err, Message: err.Error(), Extensions: map[string]any{"code": errcode.ResponseTooLarge}}
}
