package admission

import (
	"cmp"
	"fmt"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/validator/core"
	"github.com/vektah/gqlparser/v2/validator/rules"

	"paygraph/graph/errcode"
)

// MaxErrors is the most errors one response lists; one more says there were
// more.
const MaxErrors = 50

// ErrorCap caps every response's error list at MaxErrors, validation
// failures and execution errors alike (graph's response tail calls Finish).
type ErrorCap struct{}

// Finish caps resp's errors.
func (ErrorCap) Finish(resp *graphql.Response) *graphql.Response {
	if resp != nil && len(resp.Errors) > MaxErrors {
		resp.Errors = capErrors(resp.Errors)
	}
	return resp
}

// capErrors keeps the first MaxErrors of errs and a note with the code of the
// first left out.
func capErrors(errs gqlerror.List) gqlerror.List {
	code, _ := errs[MaxErrors].Extensions["code"].(string) // (the error presenter gives every error one)
	note := &gqlerror.Error{Message: fmt.Sprintf("too many errors: only the first %d are shown", MaxErrors),
		Extensions: map[string]any{"code": cmp.Or(code, errcode.Internal)}}
	return append(errs[:MaxErrors:MaxErrors], note)
}

// CappedRules returns gqlparser's default validation rules, reporting at most
// MaxErrors+1 errors in all.
func CappedRules() *rules.Rules {
	n := 0
	r := rules.NewDefaultRules()
	for name, f := range r.GetInner() {
		r.ReplaceRule(name, func(observers *core.Events, addError core.AddErrFunc) {
			f(observers, func(options ...core.ErrorOption) {
				if n++; n <= MaxErrors+1 {
					addError(options...)
				}
			})
		})
	}
	return r
}
