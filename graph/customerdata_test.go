package graph

import (
	"context"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"paygraph/graph/customerdata"
	"paygraph/graph/live"
	"paygraph/sessiontoken"
)

// The level of a request: its token's, full for the two headers, each
// lowered to CUSTOMER_DATA_MAX.
func TestCustomerDataOf(t *testing.T) {
	t.Parallel()
	payment, _ := sessiontoken.OnePayment("pay_1")
	for _, tc := range []struct {
		name  string
		scope *sessiontoken.Scope
		max   sessiontoken.CustomerData
		want  sessiontoken.CustomerData
	}{
		{"headers", nil, 0, sessiontoken.CustomerDataFull},
		{"headers, max masked", nil, sessiontoken.CustomerDataMasked, sessiontoken.CustomerDataMasked},
		{"token default", &payment, 0, sessiontoken.CustomerDataMasked},
		{"token full", ptr(payment.WithCustomerData(sessiontoken.CustomerDataFull)), 0, sessiontoken.CustomerDataFull},
		{"token full, max none", ptr(payment.WithCustomerData(sessiontoken.CustomerDataFull)), sessiontoken.CustomerDataNone, sessiontoken.CustomerDataNone},
		{"token none, max full", ptr(payment.WithCustomerData(sessiontoken.CustomerDataNone)), sessiontoken.CustomerDataFull, sessiontoken.CustomerDataNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if tc.max != 0 {
				ctx = customerdata.WithMax(ctx, tc.max)
			}
			if tc.scope != nil {
				ctx = WithScope(ctx, *tc.scope)
			}
			if got := customerDataOf(ctx); got != tc.want {
				t.Errorf("level %v, want %v", got, tc.want)
			}
		})
	}
}

// TestCallerFactsMatchContext: the caller's facts an operation reads once
// (graphTail, opstate.go's callerFacts) are what its context says: the
// scope, the customer-data level, the masked paths and the live events
// that scopeFrom, customerDataOf, maskedPathsFrom and liveEventsFrom
// read from the context without them.
func TestCallerFactsMatchContext(t *testing.T) {
	t.Parallel()
	payment, _ := sessiontoken.OnePayment("pay_1")
	for _, tc := range []struct {
		name  string
		scope *sessiontoken.Scope
		max   sessiontoken.CustomerData
		op    ast.Operation
	}{
		{"headers", nil, 0, ast.Query},
		{"headers, max masked", nil, sessiontoken.CustomerDataMasked, ast.Query},
		{"token default", &payment, 0, ast.Query},
		{"token full, max none", ptr(payment.WithCustomerData(sessiontoken.CustomerDataFull)), sessiontoken.CustomerDataNone, ast.Query},
		{"a subscription", nil, 0, ast.Subscription},
		{"a subscription, token default", &payment, 0, ast.Subscription},
		{"a mutation", nil, sessiontoken.CustomerDataMasked, ast.Mutation},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if tc.max != 0 {
				ctx = customerdata.WithMax(ctx, tc.max)
			}
			if tc.scope != nil {
				ctx = WithScope(ctx, *tc.scope)
			}
			ctx = graphql.WithOperationContext(ctx, &graphql.OperationContext{Operation: &ast.OperationDefinition{Operation: tc.op}})
			var inner context.Context
			graphTail{}.InterceptOperation(ctx, func(ctx context.Context) graphql.ResponseHandler {
				inner = ctx
				return nil
			})
			c := callerOf(inner)
			if c == nil {
				t.Fatal("no caller facts")
			}
			scope, hasScope := scopeIn(inner)
			masked := customerdata.PathsIn(inner)
			live := live.EventsIn(inner)
			if c.scope != scope || c.hasScope != hasScope || c.level != customerDataIn(inner, scope, hasScope) || c.masked != masked || c.live != live {
				t.Errorf("facts %+v, the context: scope %v %v, level %v, masked %p, live %p",
					*c, scope, hasScope, customerDataIn(inner, scope, hasScope), masked, live)
			}
			if (masked != nil) != (c.level != sessiontoken.CustomerDataFull) || (live != nil) != (tc.op == ast.Subscription) {
				t.Errorf("masked %p, live %p for level %v, %s", masked, live, c.level, tc.op)
			}
			if s, ok := scopeFrom(inner); s != scope || ok != hasScope || customerDataOf(inner) != c.level ||
				maskedPathsFrom(inner) != masked || liveEventsFrom(inner) != live {
				t.Error("the readers answer otherwise than the context")
			}
		})
	}
}
