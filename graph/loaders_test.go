package graph

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"paygraph/graph/errcode"
	"testing"

	"paygraph/graph/loaders"
	"paygraph/restclient"
)

// requestContext is the context of one request, with fresh loaders over
// rest, as LoadersMiddleware gives it: for tests that call resolvers
// directly.
func requestContext(rest REST) context.Context {
	return loaders.With(context.Background(), newLoaders(rest, nil))
}

// newLoaders returns loaders over rest masked as LoadersMiddleware's are.
func newLoaders(rest REST, limits *loaders.FetchLimits) *loaders.Loaders {
	return loaders.New(newMaskingREST(rest), limits)
}

// countingREST counts the calls it gets and answers each with a payment
// (or an empty page).
type countingREST struct{ calls int }

func (c *countingREST) ListPayments(context.Context, restclient.ListParams) (*restclient.PaymentPage, error) {
	c.calls++
	return &restclient.PaymentPage{}, nil
}
func (c *countingREST) GetPayment(_ context.Context, id string) (*restclient.Payment, error) {
	c.calls++
	return &restclient.Payment{ID: id}, nil
}
func (c *countingREST) GetPaymentLink(_ context.Context, id string) (*restclient.PaymentLink, error) {
	c.calls++
	return &restclient.PaymentLink{ID: id}, nil
}
func (c *countingREST) GetCheckoutSession(_ context.Context, id string) (*restclient.CheckoutSession, error) {
	c.calls++
	return &restclient.CheckoutSession{ID: id}, nil
}

// TestResolverWithoutLoaders: a resolver whose context has no loaders (the
// middleware is missing: a wiring bug) answers INTERNAL_SERVER_ERROR for
// every REST-backed field; nothing quietly builds loaders of its own.
func TestResolverWithoutLoaders(t *testing.T) {
	t.Parallel()
	first := 1
	r := &Resolver{}
	for _, tc := range []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"payments", func(ctx context.Context) error { _, err := r.Query().Payments(ctx, &first, nil, nil); return err }},
		{"payment", func(ctx context.Context) error { _, err := r.Query().Payment(ctx, "pay_1"); return err }},
		{"paymentLink", func(ctx context.Context) error { _, err := r.Query().PaymentLink(ctx, "pl_1"); return err }},
		{"checkoutSession", func(ctx context.Context) error { _, err := r.Query().CheckoutSession(ctx, "ref1"); return err }},
		{"node", func(ctx context.Context) error { _, err := r.Query().Node(ctx, "pay_1"); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A caller with credentials: only the loaders are missing.
			caller := restclient.Credentials{APIKey: "ak_test_w", APISecret: "sk_test_w"}
			err := tc.call(restclient.WithCredentials(context.Background(), caller))
			if !errors.Is(err, loaders.ErrNoLoaders) {
				t.Fatalf("error %v, want loaders.ErrNoLoaders", err)
			}
			if got := ErrorPresenter(context.Background(), err); got.Extensions["code"] != errcode.Internal || got.Message != "internal error" {
				t.Errorf("presented as %q %v, want internal error", got.Message, got.Extensions)
			}
			rest := &countingREST{}
			if err := tc.call(restclient.WithCredentials(requestContext(rest), caller)); err != nil {
				t.Fatalf("with loaders: %v", err)
			}
			if rest.calls != 1 {
				t.Errorf("with loaders: %d REST calls, want 1", rest.calls)
			}
		})
	}
}

// TestLoadersMiddleware: each request gets loaders of its own, the same
// for the whole request, so that a record is fetched once per request and
// never served to another.
func TestLoadersMiddleware(t *testing.T) {
	t.Parallel()
	rest := &countingREST{}
	var seen []*loaders.Loaders
	h := LoadersMiddleware(rest, nil)(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		l := loaders.For(r.Context())
		if loaders.For(r.Context()) != l {
			t.Error("two loaders within one request")
		}
		for range 3 {
			if _, err := l.PaymentThunk(r.Context(), "pay_1")(); err != nil {
				t.Error(err)
			}
		}
		seen = append(seen, l)
	}))
	for range 2 {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/graphql", nil))
	}
	if len(seen) != 2 || seen[0] == seen[1] {
		t.Fatalf("requests shared their loaders")
	}
	if rest.calls != 2 {
		t.Errorf("%d REST calls for one payment asked 3 times in each of 2 requests, want 2", rest.calls)
	}
}
