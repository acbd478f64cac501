package gqlhttp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"paygraph/ratelimit"
	"paygraph/restclient"
)

// TestAdmissionNamesBudget: the admission step makes one decision per
// request and reports each refusal once, naming the budget that refused
// it: the merchant's requests for a merchant, its address's then the
// shared budget for anonymous requests, the bounds on unaccepted pairs
// for an operation of a pair not yet accepted.
func TestAdmissionNamesBudget(t *testing.T) {
	t.Parallel()
	one := func(t *testing.T) *ratelimit.Limiter {
		t.Helper()
		// Burst 1, one a second: the second request is refused.
		l, err := ratelimit.New(ratelimit.Config{RequestsPerSecond: 1, RequestsBurst: 1})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	many := func(t *testing.T) *ratelimit.Limiter {
		t.Helper()
		l, err := ratelimit.New(ratelimit.Config{RequestsPerSecond: 100, RequestsBurst: 100, RESTCallsPerSecond: 100, RESTBurst: 100})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	refuse := func(context.Context) error {
		return &restclient.Error{Kind: restclient.KindUnauthorized, Message: "refused"}
	}
	for _, tc := range []struct {
		name     string
		config   func(t *testing.T) AdmissionConfig
		merchant string // the merchant merchantOf names, "" anonymous
		pair     bool   // the request carries a credential pair
		want     Refusal
	}{
		{"a merchant over its requests", func(t *testing.T) AdmissionConfig {
			return AdmissionConfig{Merchants: one(t), Anonymous: one(t), AnonymousAddress: one(t), Merchant: merchantOf}
		}, "m", false, Refusal{Code: "RATE_LIMITED", Budget: BudgetMerchant, Answered: true}},
		{"anonymous, over its address's budget", func(t *testing.T) AdmissionConfig {
			return AdmissionConfig{Merchants: one(t), Anonymous: many(t), AnonymousAddress: one(t), Merchant: merchantOf}
		}, "", false, Refusal{Code: "RATE_LIMITED", Budget: BudgetAnonymousAddress, Answered: true}},
		{"anonymous, over the shared budget", func(t *testing.T) AdmissionConfig {
			return AdmissionConfig{Merchants: one(t), Anonymous: one(t), AnonymousAddress: many(t), Merchant: merchantOf}
		}, "", false, Refusal{Code: "RATE_LIMITED", Budget: BudgetAnonymous, Answered: true}},
		{"a pair not yet accepted, refused its REST calls", func(t *testing.T) AdmissionConfig {
			return AdmissionConfig{Merchants: many(t), Anonymous: many(t), AnonymousAddress: many(t), Merchant: merchantOf, Admit: refuse}
		}, "", true, Refusal{Code: "UNAUTHENTICATED", Budget: BudgetUnaccepted}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got []Refusal
			c := tc.config(t)
			c.OnRefused = func(_ context.Context, r Refusal) { got = append(got, r) }
			h := NewAdmission(c).Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_ = ChargeRESTCalls(r.Context(), 1) // the operation's charge
			}))
			var last int
			for range 2 {
				req := httptest.NewRequest(http.MethodPost, "/graphql", nil)
				ctx := req.Context()
				if tc.merchant != "" {
					ctx = context.WithValue(ctx, merchantKey{}, tc.merchant)
				}
				if tc.pair {
					ctx = restclient.WithCredentials(ctx, restclient.Credentials{APIKey: "k", APISecret: "s"})
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req.WithContext(ctx))
				last = rec.Code
			}
			if want := len(got); want == 0 || got[len(got)-1] != tc.want {
				t.Fatalf("refusals reported %+v, want the last %+v", got, tc.want)
			}
			if tc.want.Answered != (last == http.StatusTooManyRequests) {
				t.Fatalf("status %d; answered by the step: %v", last, tc.want.Answered)
			}
		})
	}
}
