package observe

import (
	"context"
	"net/url"
	"testing"

	"paygraph/restclient"
)

// wired is Options as gateway/ hands them in: restclient's route names
// and credential shapes, the loaders' names, and secrets as the request's
// own credentials. observe's tests take the shapes from their owner
// rather than spelling them out a second time (a test import: the package
// itself imports no restclient).
func wired(secrets func(context.Context) []string) Options {
	return Options{
		RouteOf:     func(u *url.URL) string { return string(restclient.EndpointOf(u)) },
		LoaderNames: []string{"payment", "payment_link", "checkout_session"},
		Redact:      restclient.RedactCredentials,
		RedactKey:   restclient.RedactKey,
		Secrets:     secrets,
	}
}

func TestRouteOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		o    Options
		url  string
		want string
	}{
		{"a route", wired(nil), "http://h/api/v1/payments/pay_prod_abc", "/api/v1/payments/{id}"},
		{"not a route", wired(nil), "http://h/api/v1/payments/pay_1/refunds", EndpointOther},
		{"the root", wired(nil), "http://h/", EndpointOther},
		{"no namer", Options{}, "http://h/api/v1/payments/pay_prod_abc", EndpointOther},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, err := url.Parse(tc.url)
			if err != nil {
				t.Fatal(err)
			}
			if got := tc.o.routeOf(u); got != tc.want {
				t.Errorf("routeOf(%s) = %q, want %q", tc.url, got, tc.want)
			}
		})
	}
	t.Run("nil URL", func(t *testing.T) {
		if got := wired(nil).routeOf(nil); got != EndpointOther {
			t.Errorf("routeOf(nil) = %q", got)
		}
	})
}

// TestLogNameTakesTheShapeHandedIn: an operation name is "other" when the
// Redact handed in changes it, and only then.
func TestLogNameTakesTheShapeHandedIn(t *testing.T) {
	t.Parallel()
	marks := Options{Redact: func(s string) string {
		if s == "Forbidden" {
			return Redacted
		}
		return s
	}}
	for _, tc := range []struct {
		name string
		o    Options
		op   string
		want string
	}{
		{"no shape: a key-like name is plain", Options{}, "ak_test_Zz9Yy8", "ak_test_Zz9Yy8"},
		{"restclient's shape: a key", wired(nil), "ak_test_Zz9Yy8", OperationOther},
		{"restclient's shape: a secret", wired(nil), "sk_prod_Zz9Yy8", OperationOther},
		{"restclient's shape: a plain name", wired(nil), "ListPayments", "ListPayments"},
		{"another shape", marks, "Forbidden", OperationOther},
		{"another shape, another name", marks, "Allowed", "Allowed"},
		{"anonymous", Options{}, "", OperationAnonymous},
		{"not plain", Options{}, "a-b", OperationOther},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.o.LogName(tc.op); got != tc.want {
				t.Errorf("LogName(%q) = %q, want %q", tc.op, got, tc.want)
			}
		})
	}
}
