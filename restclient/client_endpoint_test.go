package restclient

import (
	"net/url"
	"strings"
	"testing"
)

func TestEndpointOf(t *testing.T) {
	t.Parallel()
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

// endpointBySearch is EndpointOf as it was before issue 25: the route
// after the last "/api/v1/" of the escaped path.
func endpointBySearch(u *url.URL) Endpoint {
	if u == nil {
		return ""
	}
	p := u.EscapedPath()
	i := strings.LastIndex(p, "/api/v1/")
	if i < 0 {
		return ""
	}
	p = strings.TrimSuffix(p[i:], "/")
	if p == string(EndpointListPayments) {
		return EndpointListPayments
	}
	for _, ep := range idRoutes {
		prefix := strings.TrimSuffix(string(ep), "{id}")
		if id, ok := strings.CutPrefix(p, prefix); ok && id != "" && !strings.Contains(id, "/") {
			return ep
		}
	}
	return ""
}

// endpointSeeds are paths for the differential test and the fuzz
// corpus: the routes with and without base paths, trailing and doubled
// slashes, escapes, and near misses.
var endpointSeeds = []string{
	"/api/v1/payments", "/api/v1/payments/", "/api/v1/payments//", "/api/v1/payments/pay_1",
	"/api/v1/payments/pay_1/", "/api/v1/payments/pay_1//", "/base/api/v1/payments/pay_1",
	"/api/v1/payments/api/v1/payments/x", "/api/v1/payments/api/v1/payments", "/api/v1/payment-links/x",
	"/api/v1/payment-links", "/api/v1/checkout/sessions/x", "/api/v1/checkout/sessions/", "/api/v1/sessions/x",
	"/api/v1/", "/api/v1", "/", "", "/x/api/v1/", "/api/v1/payments/a b", "/api/v1/payments/a%2Fb",
	"/api/v1/payments/a?b", "/api/v1/payments/%", "/api/v1/payments/ü", "payments/x", "/apiXv1/payments/x",
	"/api/v1/checkout/sessions/api/v1/payments/", "/api/v1/payments/pay_1/refunds", "/api/v2/payments/pay_1",
}

func TestEndpointOfSameAsSearch(t *testing.T) {
	t.Parallel()
	for _, p := range endpointSeeds {
		for _, raw := range []bool{false, true} {
			name := p
			if raw {
				name += " (as parsed)"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				u := &url.URL{Scheme: "http", Host: "h", Path: p}
				if raw {
					var err error
					if u, err = url.Parse("http://h" + p); err != nil {
						t.Skip("not a URL")
					}
				}
				if got, want := EndpointOf(u), endpointBySearch(u); got != want {
					t.Errorf("EndpointOf(%q, raw %q) = %q, the search's %q", u.Path, u.RawPath, got, want)
				}
			})
		}
	}
}

func FuzzEndpointOf(f *testing.F) {
	for _, p := range endpointSeeds {
		f.Add(p, "")
	}
	f.Add("/api/v1/payments/a/b", "/api/v1/payments/a%2Fb")
	f.Add("/api/v1/payments/a/b", "/api/v1/payments/wrong")
	f.Fuzz(func(t *testing.T, path, rawPath string) {
		u := &url.URL{Scheme: "http", Host: "h", Path: path, RawPath: rawPath}
		if got, want := EndpointOf(u), endpointBySearch(u); got != want {
			t.Errorf("EndpointOf(%q, raw %q) = %q, the search's %q", path, rawPath, got, want)
		}
	})
}
