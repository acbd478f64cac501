package sandbox_test

import (
	"net/http"
	"net/url"
	"testing"

	"paygraph/sandbox"
)

// TestFixtures: every business has fixtures, each id is served to that
// business over the REST routes (the session by its reference too), and
// they are the same on a second server and after a status change.
func TestFixtures(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sandbox.Options{})
	fx := e.sb.Fixtures()
	if len(fx) != len(e.sb.Businesses()) {
		t.Fatalf("%d fixtures for %d businesses", len(fx), len(e.sb.Businesses()))
	}
	for i, f := range fx {
		t.Run(f.Business.Name, func(t *testing.T) {
			t.Parallel()
			if f.Business != e.sb.Businesses()[i] {
				t.Errorf("business %d: %+v, want %+v", i, f.Business, e.sb.Businesses()[i])
			}
			for _, path := range []string{
				"/api/v1/payments/" + url.PathEscape(f.PaymentID),
				"/api/v1/payment-links/" + url.PathEscape(f.PaymentLinkID),
				"/api/v1/checkout/sessions/" + url.PathEscape(f.CheckoutReference),
				"/api/v1/checkout/sessions/" + url.PathEscape(f.CheckoutSessionID),
				"/api/v1/payments/" + url.PathEscape(f.PendingPaymentID),
			} {
				if r := e.do(t, http.MethodGet, path, &f.Business); r.status != http.StatusOK {
					t.Errorf("GET %s: %d %s", path, r.status, r.body)
				}
			}
		})
	}
	// The PENDING payment is pending (a subscription to it waits for a
	// change), and stays the fixture once it is settled.
	for _, f := range fx {
		pending := false
		for _, p := range e.sb.Payments(f.Business.APIKey) {
			pending = pending || p.ID == f.PendingPaymentID && p.Status == "PENDING"
		}
		if !pending {
			t.Errorf("%s: PendingPaymentID %q is no PENDING payment", f.Business.Name, f.PendingPaymentID)
		}
	}
	if err := e.sb.SetPaymentStatus(fx[0].Business.APIKey, fx[0].PaymentID, sandbox.StatusRefunded); err != nil {
		t.Fatal(err)
	}
	if err := e.sb.SetPaymentStatus(fx[0].Business.APIKey, fx[0].PendingPaymentID, "SUCCEEDED"); err != nil {
		t.Fatal(err)
	}
	again := sandbox.New(sandbox.Options{}).Fixtures()
	for i := range fx {
		if after := e.sb.Fixtures()[i]; after != fx[i] || again[i] != fx[i] {
			t.Errorf("fixtures moved: %+v, after a status change %+v, on a new server %+v", fx[i], after, again[i])
		}
	}
}
