package sessiontoken_test

// The composition root turns a token's credentials into the REST client's
// with a plain conversion; this keeps the two types convertible. It is a
// test-only import: the package itself imports nothing of the gateway.

import (
	"testing"

	"paygraph/restclient"
	"paygraph/sessiontoken"
)

func TestCredentialsConvertToRESTClient(t *testing.T) {
	t.Parallel()
	c := sessiontoken.Credentials{APIKey: "ak_test_x", APISecret: "sk_test_y"}
	r := restclient.Credentials(c)
	if r.APIKey != c.APIKey || r.APISecret != c.APISecret {
		t.Fatalf("conversion lost a field")
	}
	if sessiontoken.Credentials(r) != c {
		t.Fatalf("conversion does not round-trip")
	}
}
