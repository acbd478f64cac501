package restclient

import (
	"context"
	"strings"
	"testing"
)

func TestMerchantOf(t *testing.T) {
	ctx := context.Background()
	of := func(key, secret string) string {
		t.Helper()
		m, ok := MerchantOf(WithCredentials(ctx, Credentials{APIKey: key, APISecret: secret}))
		if !ok {
			t.Fatalf("no merchant for a full pair")
		}
		if strings.Contains(m, secret) || strings.Contains(m, key) {
			t.Fatalf("merchant %q holds a credential", m)
		}
		return m
	}
	a := of("ak_test_a", "sk_test_a")
	for _, tt := range []struct {
		name        string
		key, secret string
		same        bool
	}{
		{"same pair", "ak_test_a", "sk_test_a", true},
		{"another secret", "ak_test_a", "sk_test_b", false},
		{"another key", "ak_test_b", "sk_test_a", false},
		{"bytes moved from key to secret", "ak_test_", "ask_test_a", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := of(tt.key, tt.secret); (got == a) != tt.same {
				t.Fatalf("merchant %q vs %q: same=%v, want %v", got, a, got == a, tt.same)
			}
		})
	}
	if m, ok := MerchantOf(ctx); ok || m != "" {
		t.Fatalf("no credentials: %q %v", m, ok)
	}
	if _, ok := MerchantOf(WithCredentials(ctx, Credentials{APIKey: "ak_test_a"})); ok {
		t.Fatal("half a pair names a merchant")
	}
}
