package graph

import (
	"context"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"paygraph/restclient"
	"paygraph/sessiontoken"
)

// The masked forms, as docs/clients.md documents them.
func TestMaskedForms(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		mask           func(string) string
	}{
		{"name of two words", "Rahim Uddin", "R. U.", maskName},
		{"name of one word", "Rahim", "R.", maskName},
		{"name in lower case, spaced", "  md.  rahim   uddin ", "M. R. U.", maskName},
		{"name of many words keeps four initials", "A B C D E F", "A. B. C. D.", maskName},
		{"name in Bengali script", "রহিম উদ্দিন", "র. উ.", maskName},
		{"empty name", "", "", maskName},
		{"email", "rahim.uddin7@example.com", "r***@example.com", maskEmail},
		{"email of a one-letter local part", "r@mail.example.net", "r***@mail.example.net", maskEmail},
		{"email without a local part", "@example.com", "***", maskEmail},
		{"email without a domain", "rahim@", "***", maskEmail},
		{"not an email", "rahim", "***", maskEmail},
		{"email with a multibyte first letter", "é.dupont@example.fr", "é***@example.fr", maskEmail},
		{"phone +880 (14)", "+8801712340001", "+8801*****0001", maskPhone},
		{"phone local (11)", "01712340001", "01*****0001", maskPhone},
		{"phone of 9", "123456789", "*****6789", maskPhone},
		{"phone of 8", "12345678", "****5678", maskPhone},
		{"phone of 6", "123456", "****56", maskPhone},
		{"phone of 3", "123", "***", maskPhone},
		{"empty phone", "", "", maskPhone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.mask(tc.in); got != tc.want {
				t.Errorf("%q masks to %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func strp(s string) *string { return &s }

// Each level's customer block, field by field.
func TestMaskCustomer(t *testing.T) {
	in := restclient.Customer{Name: strp("Rahim Uddin"), Email: strp("rahim@example.com"), Phone: strp("+8801712340001"),
		Address: strp("House 1, Road 2, Sylhet"), City: strp("Sylhet")}
	str := func(s *string) string {
		if s == nil {
			return "null"
		}
		return *s
	}
	for _, tc := range []struct {
		level                             sessiontoken.CustomerData
		name, email, phone, address, city string
	}{
		{sessiontoken.CustomerDataFull, "Rahim Uddin", "rahim@example.com", "+8801712340001", "House 1, Road 2, Sylhet", "Sylhet"},
		{sessiontoken.CustomerDataMasked, "R. U.", "r***@example.com", "+8801*****0001", "null", "Sylhet"},
		{sessiontoken.CustomerDataNone, "null", "null", "null", "null", "null"},
	} {
		t.Run(tc.level.String(), func(t *testing.T) {
			c := maskCustomer(in, tc.level)
			got := [5]string{str(c.Name), str(c.Email), str(c.Phone), str(c.Address), str(c.City)}
			want := [5]string{tc.name, tc.email, tc.phone, tc.address, tc.city}
			if got != want {
				t.Errorf("got %q, want %q", got, want)
			}
		})
	}
	if c := maskCustomer(restclient.Customer{}, sessiontoken.CustomerDataMasked); c != (restclient.Customer{}) {
		t.Errorf("a customer without data masks to %+v", c)
	}
}

// The level of a request: its token's, full for the two headers, each
// lowered to CUSTOMER_DATA_MAX.
func TestCustomerDataOf(t *testing.T) {
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
				ctx = WithCustomerDataMax(ctx, tc.max)
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
				ctx = WithCustomerDataMax(ctx, tc.max)
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
			masked, _ := inner.Value(maskedPathsKey{}).(*maskedPaths)
			live, _ := inner.Value(liveEventsKey{}).(*liveEvents)
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
