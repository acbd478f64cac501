package restclient

import (
	"net/url"
	"testing"
)

func TestEndpointOf(t *testing.T) {
	for _, tc := range []struct {
		url  string
		want Endpoint
	}{
		{"http://h/api/v1/payments", EndpointListPayments},
		{"http://h/api/v1/payments?cursor=abc&limit=5", EndpointListPayments},
		{"http://h/api/v1/payments/", EndpointListPayments},
		{"http://h/api/v1/payments/pay_prod_abc", EndpointGetPayment},
		{"http://h/base/path/api/v1/payments/pay_prod_abc", EndpointGetPayment},
		{"http://h/api/v1/payments/a%2Fb", EndpointGetPayment}, // an escaped '/' stays in the one segment
		{"http://h/api/v1/payment-links/plink_123", EndpointGetPaymentLink},
		{"http://h/api/v1/checkout/sessions/cs_test_1", EndpointGetCheckoutSession},
		{"http://h/api/v1/payments/pay_1/refunds", ""},
		{"http://h/api/v1/checkout/sessions", ""},
		{"http://h/api/v2/payments/pay_1", ""},
		{"http://h/pay_prod_abc", ""},
		{"http://h/", ""},
	} {
		u, err := url.Parse(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		if got := EndpointOf(u); got != tc.want {
			t.Errorf("EndpointOf(%s) = %q, want %q", tc.url, got, tc.want)
		}
	}
	if got := EndpointOf(nil); got != "" {
		t.Errorf("EndpointOf(nil) = %q", got)
	}
}
