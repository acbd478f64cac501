package graph

import (
	"fmt"
	"paygraph/graph/admission"
	"paygraph/graph/errcode"
	"strings"
	"testing"
)

// TestValidationBomb: issue 11's bomb (1,450 copies of one alias with
// different arguments, 29 KB, no credentials needed) answered 422 with a
// 252 MB body. It is now refused before validation, over POST and GET,
// with one error and a small body; and documents under the limits that
// still produce many validation errors get at most admission.MaxErrors of them plus
// a "too many errors" entry.
func TestValidationBomb(t *testing.T) {
	t.Parallel()
	r := NewRig(t, RigConfig{})
	var conflicts, unknown strings.Builder
	conflicts.WriteString("{")
	for i := range admission.MaxSameResponseName {
		fmt.Fprintf(&conflicts, ` a:node(id:"%d"){id}`, i) // 496 conflicting pairs
	}
	conflicts.WriteString("}")
	unknown.WriteString("{")
	for i := range 900 {
		fmt.Fprintf(&unknown, " a%d:paymnt", i) // 900 unknown fields
	}
	unknown.WriteString("}")

	for _, tc := range []struct {
		name, query, code string
		errors            int
	}{
		{"bomb", bomb(1450), errcode.FieldLimit, 1},
		{"conflicts under the limit", conflicts.String(), "GRAPHQL_VALIDATION_FAILED", admission.MaxErrors + 1},
		{"unknown fields", unknown.String(), "GRAPHQL_VALIDATION_FAILED", admission.MaxErrors + 1},
	} {
		for _, method := range []string{"POST", "GET"} {
			t.Run(tc.name+" over "+method, func(t *testing.T) {
				r.Sandbox.ResetCalls()
				a := r.post
				if method == "GET" {
					a = func(tb testing.TB, q string, _ map[string]any) answer { return r.get(tb, q) }
				}
				got := a(t, tc.query, nil)
				got.wantRefused(t, tc.code)
				if len(got.Errors) != tc.errors {
					t.Errorf("%d errors, want %d", len(got.Errors), tc.errors)
				}
				if tc.errors > admission.MaxErrors && !strings.HasPrefix(got.Errors[admission.MaxErrors].Message, "too many errors") {
					t.Errorf("last error %q", got.Errors[admission.MaxErrors].Message)
				}
				if len(got.body) >= 64<<10 {
					t.Errorf("body is %d bytes", len(got.body))
				}
				if n := r.Sandbox.CallCount(""); n != 0 {
					t.Errorf("%d REST calls", n)
				}
			})
		}
	}
}

// TestExecutionErrorsCapped: five aliases of nodes(ids:) with 100 ids
// that are not Node ids each (500 REST calls at most: within the default
// complexity) give 500 errors at execution; the response lists admission.MaxErrors
// and says there were more.
func TestExecutionErrorsCapped(t *testing.T) {
	t.Parallel()
	r := NewRig(t, RigConfig{})
	ids := `"x"` + strings.Repeat(`, "x"`, 99)
	var q strings.Builder
	q.WriteString("{")
	for i := range 5 {
		fmt.Fprintf(&q, " n%d: nodes(ids: [%s]) { id }", i, ids)
	}
	q.WriteString("}")
	a := r.post(t, q.String(), nil)
	if len(a.Errors) != admission.MaxErrors+1 {
		t.Fatalf("%d errors, want %d", len(a.Errors), admission.MaxErrors+1)
	}
	for _, c := range a.codes() {
		if c != errcode.BadUserInput {
			t.Fatalf("codes %v", a.codes())
		}
	}
	if last := a.Errors[admission.MaxErrors].Message; !strings.HasPrefix(last, "too many errors") {
		t.Errorf("last error %q", last)
	}
	if !strings.Contains(string(a.Data), `"n4":[null`) {
		t.Errorf("data %.200s", a.Data)
	}
}

// TestLimitsBeforeValidation: the limits are checked on the parsed
// document, before validation (an invalid document over a limit gets the
// limit's code), on every operation and fragment it holds, fragments
// counted each time they are spread.
func TestLimitsBeforeValidation(t *testing.T) {
	t.Parallel()
	r := NewRig(t, RigConfig{Server: ServerConfig{Limits: admission.QueryLimits{MaxDepth: 5, MaxFields: 100}}})
	wide := func(n int, field string) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, " f%d:%s", i, field)
		}
		return b.String()
	}
	same := func(n int) string { return strings.Repeat(` a:payment(id:"pay_1"){id}`, n) }
	var emptyChain strings.Builder // 2^30 spreads of fragments that select nothing
	emptyChain.WriteString("{ ...E0 }")
	for i := range 30 {
		fmt.Fprintf(&emptyChain, " fragment E%d on Query { ...E%d ...E%d }", i, i+1, i+1)
	}
	emptyChain.WriteString(" fragment E30 on Query { ...E30 }")
	var fragments strings.Builder
	fragments.WriteString("{ __typename }")
	for i := range admission.MaxFragments + 1 {
		fmt.Fprintf(&fragments, " fragment F%d on Query { __typename }", i)
	}

	for _, tc := range []struct{ name, query, code string }{
		{"too wide", "{" + wide(101, "__typename") + "}", errcode.FieldLimit},
		{"too wide and invalid", "{" + wide(101, "nosuchfield") + "}", errcode.FieldLimit},
		{"too wide through a fragment spread twice", "{ ...W ...W } fragment W on Query {" + wide(51, "__typename") + "}", errcode.FieldLimit},
		{"second operation too wide", "query A { __typename } query B {" + wide(101, "__typename") + "}", errcode.FieldLimit},
		{"unused fragment too wide", "{ __typename } fragment U on Query {" + wide(101, "__typename") + "}", errcode.FieldLimit},
		{"unused fragment too deep", `{ __typename } fragment D on Query { a { b { c { d { e { f } } } } } }`, errcode.DepthLimit},
		{"one response name 33 times", "{" + same(admission.MaxSameResponseName+1) + "}", errcode.FieldLimit},
		{"one response name 33 times through fragments", "{ ...A ...B } fragment A on Query {" + same(17) + "} fragment B on Query {" + same(16) + "}", errcode.FieldLimit},
		{"one response name 33 times under merged fields", `{ p: payment(id: "pay_1") { a: id } p: payment(id: "pay_1") {` + strings.Repeat(" a: id", 32) + "} }", errcode.FieldLimit},
		{"fragments that select nothing, spread 2^30 times", emptyChain.String(), errcode.FieldLimit},
		{"more fragments than the limit", fragments.String(), errcode.QueryLengthLimit},
		{"too many tokens", "{ a(b: " + strings.Repeat("[", admission.ParserTokenLimit/2) + strings.Repeat("]", admission.ParserTokenLimit/2) + ") }", "GRAPHQL_PARSE_FAILED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r.post(t, tc.query, nil).wantRefused(t, tc.code)
		})
	}

	r = NewRig(t, RigConfig{Server: ServerConfig{Limits: admission.QueryLimits{MaxDepth: 3}}})
	for _, tc := range []struct{ name, query string }{
		{"too deep", `{ checkoutSession(id: "x") { payment { customer { name } } } }`},
		{"too deep through fragments", `{ checkoutSession(id: "x") { ...S } } fragment S on CheckoutSession { payment { amount { ...M } } } fragment M on Money { amount }`},
	} {
		t.Run(tc.name+" at MaxDepth 3", func(t *testing.T) {
			r.post(t, tc.query, nil).wantRefused(t, errcode.DepthLimit)
		})
	}

	t.Run("32 identical fields are served", func(t *testing.T) {
		id := r.Sandbox.Payments(r.Biz.APIKey)[0].ID
		r.post(t, "{"+strings.Repeat(fmt.Sprintf(` a: payment(id: %q) { id }`, id), admission.MaxSameResponseName)+"}", nil).wantNoErrors(t)
	})
	t.Run("GraphiQL's introspection query is served", func(t *testing.T) {
		NewRig(t, RigConfig{}).post(t, introspectionQuery, nil).wantNoErrors(t)
	})
}
