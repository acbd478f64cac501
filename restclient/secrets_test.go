package restclient

import (
	"context"
	"slices"
	"testing"
)

// TestSecretsOf: the pair's two values, from the context's own slice (no
// allocation per call, as the logger asks for them on every line), apart
// from the values the REST calls' header holds; nil without a usable pair.
func TestSecretsOf(t *testing.T) {
	ctx := WithCredentials(context.Background(), Credentials{APIKey: "ak_test_k", APISecret: "sk_test_s"})
	if got := SecretsOf(ctx); !slices.Equal(got, []string{"ak_test_k", "sk_test_s"}) {
		t.Fatalf("SecretsOf = %q", got)
	}
	if n := testing.AllocsPerRun(100, func() { _ = SecretsOf(ctx) }); n != 0 {
		t.Errorf("SecretsOf allocates %.0f times a call; want 0", n)
	}
	SecretsOf(ctx)[0] = "changed by a careless reader"
	cv, _ := credentialsFrom(ctx)
	if got := cv.requestHeader().Get(HeaderAPIKey); got != "ak_test_k" {
		t.Errorf("the REST calls' x-api-key is %q after a write to SecretsOf's slice", got)
	}
	for _, c := range []Credentials{{}, {APIKey: "ak_test_k"}, {APISecret: "sk_test_s"}} {
		if got := SecretsOf(WithCredentials(context.Background(), c)); got != nil {
			t.Errorf("SecretsOf(%#v) = %q; want nil", c, got)
		}
	}
	if got := SecretsOf(context.Background()); got != nil {
		t.Errorf("SecretsOf without credentials = %q; want nil", got)
	}
}
