package graph

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/99designs/gqlgen/graphql"

	"paygraph/graph/errcode"
	"paygraph/graph/model"
	"paygraph/restclient"
	"paygraph/sessiontoken"
)

// sessionREST serves one checkout session and any payment, counting calls.
type sessionREST struct {
	REST
	sessions, payments, lists, links atomic.Int64
}

var scopeSession = restclient.CheckoutSession{ID: "pay_prod_00aa", Reference: "REF9", PaymentID: "pay_prod_11bb"}

func (s *sessionREST) GetCheckoutSession(_ context.Context, idOrRef string) (*restclient.CheckoutSession, error) {
	s.sessions.Add(1)
	if idOrRef == scopeSession.ID || idOrRef == scopeSession.Reference {
		cs := scopeSession
		return &cs, nil
	}
	return nil, &restclient.Error{Kind: restclient.KindNotFound}
}

func (s *sessionREST) GetPayment(_ context.Context, id string) (*restclient.Payment, error) {
	s.payments.Add(1)
	return &restclient.Payment{ID: id, Status: restclient.StatusSucceeded}, nil
}

func (s *sessionREST) ListPayments(context.Context, restclient.ListParams) (*restclient.PaymentPage, error) {
	s.lists.Add(1)
	return &restclient.PaymentPage{}, nil
}

func (s *sessionREST) GetPaymentLink(_ context.Context, id string) (*restclient.PaymentLink, error) {
	s.links.Add(1)
	return &restclient.PaymentLink{ID: id}, nil
}

func (s *sessionREST) total() int64 {
	return s.sessions.Load() + s.payments.Load() + s.lists.Load() + s.links.Load()
}

// The resolvers' scope checks, each with its REST cost: a token that
// carries its session's names (pinned at minting) costs nothing for a
// refusal; one that does not reads its own session once to learn them.
func TestResolverScopes(t *testing.T) {
	t.Parallel()
	// Pinned at minting (the gateway's LookupCheckoutSession) or learned:
	// the scope knows the session's names either way.
	pinnedScope := func(t *testing.T) Scope {
		s, _ := sessiontoken.OneCheckoutSession("REF9")
		if !s.LearnCheckoutSession(sessiontoken.CheckoutSessionIDs{ID: scopeSession.ID, Reference: scopeSession.Reference, PaymentID: scopeSession.PaymentID}) {
			t.Fatal("the scope did not take its session's names")
		}
		return s
	}
	unpinned := func(*testing.T) Scope { s, _ := sessiontoken.OneCheckoutSession("REF9"); return s }
	onePayment := func(*testing.T) Scope { s, _ := sessiontoken.OnePayment("pay_prod_11bb"); return s }
	type call func(r *Resolver, ctx context.Context) error
	sessionBy := func(id string) call {
		return func(r *Resolver, ctx context.Context) error { _, err := r.Query().CheckoutSession(ctx, id); return err }
	}
	payment := func(id string) call {
		return func(r *Resolver, ctx context.Context) error { _, err := r.Query().Payment(ctx, id); return err }
	}
	// The subgraph mode's entities, one representation each: the error
	// is the one at its index.
	atIndex := func(err error) error {
		if errs, ok := err.(graphql.BatchErrorList); ok {
			return errs[0]
		}
		return err
	}
	paymentEntity := func(id string) call {
		return func(r *Resolver, ctx context.Context) error {
			_, err := r.Entity().FindPayment(ctx, []*model.PaymentRepresentation{{IDRef: &id}})
			return atIndex(err)
		}
	}
	sessionEntity := func(ref string) call {
		return func(r *Resolver, ctx context.Context) error {
			_, err := r.Entity().FindCheckoutSession(ctx, []*model.CheckoutSessionRepresentation{{Reference: &ref, MatchedKey: model.CheckoutSessionMatchedKeyReference}})
			return atIndex(err)
		}
	}
	tests := []struct {
		name      string
		scope     func(*testing.T) Scope // nil: no token
		call      call
		forbidden bool
		restCalls int64
	}{
		{"no scope lists", nil, func(r *Resolver, ctx context.Context) error {
			_, err := r.Query().Payments(ctx, nil, nil, nil)
			return err
		}, false, 1},
		{"checkout scope lists", unpinned, func(r *Resolver, ctx context.Context) error {
			_, err := r.Query().Payments(ctx, nil, nil, nil)
			return err
		}, true, 0},
		{"checkout scope, its session by reference", unpinned, sessionBy("REF9"), false, 1},
		{"unpinned, its session by id: learns first", unpinned, sessionBy("pay_prod_00aa"), false, 1},
		{"unpinned, its payment: learns first", unpinned, payment("pay_prod_11bb"), false, 2},
		{"unpinned, another payment: learns, refuses", unpinned, payment("pay_prod_22cc"), true, 1},
		{"pinned, its session by id", pinnedScope, sessionBy("pay_prod_00aa"), false, 1},
		{"pinned, another payment", pinnedScope, payment("pay_prod_22cc"), true, 0},
		{"pinned, another session", pinnedScope, sessionBy("OTHER"), true, 0},
		{"pinned, a link", pinnedScope, func(r *Resolver, ctx context.Context) error {
			_, err := r.Query().PaymentLink(ctx, "pl_x1")
			return err
		}, true, 0},
		{"pinned, node of a link", pinnedScope, func(r *Resolver, ctx context.Context) error { _, err := r.Query().Node(ctx, "pl_x1"); return err }, true, 0},
		{"pinned, the session's payment field", pinnedScope, func(r *Resolver, ctx context.Context) error {
			_, err := r.CheckoutSession().Payment(ctx, model.NewCheckoutSession(&restclient.CheckoutSession{PaymentID: "pay_prod_11bb"}))
			return err
		}, false, 1},
		{"payment scope, its payment", onePayment, payment("pay_prod_11bb"), false, 1},
		{"payment scope, a session", onePayment, sessionBy("REF9"), true, 0},
		{"payment scope, its payment as an entity", onePayment, paymentEntity("pay_prod_11bb"), false, 1},
		{"payment scope, another payment as an entity", onePayment, paymentEntity("pay_prod_22cc"), true, 0},
		{"pinned, another payment as an entity", pinnedScope, paymentEntity("pay_prod_22cc"), true, 0},
		{"payment scope, a session as an entity", onePayment, sessionEntity("REF9"), true, 0},
		{"checkout scope, its session as an entity", unpinned, sessionEntity("REF9"), false, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rest := &sessionREST{}
			r := &Resolver{}
			ctx := restclient.WithCredentials(requestContext(rest), restclient.Credentials{APIKey: "ak_test_s", APISecret: "sk_test_s"})
			if tc.scope != nil {
				ctx = WithScope(ctx, tc.scope(t))
			}
			err := tc.call(r, ctx)
			_, isScope := errors.AsType[*ScopeError](err)
			if isScope != tc.forbidden || !tc.forbidden && err != nil {
				t.Fatalf("err %v, want forbidden %v", err, tc.forbidden)
			}
			if tc.forbidden && errcode.Of(err) != errcode.Forbidden {
				t.Errorf("code %q, want FORBIDDEN", errcode.Of(err))
			}
			if got := rest.total(); got != tc.restCalls {
				t.Errorf("%d REST calls, want %d", got, tc.restCalls)
			}
		})
	}
}
