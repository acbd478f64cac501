package restclient

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"paygraph/internal/testenv"
)

func TestMerchantOf(t *testing.T) {
	t.Parallel()
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
			t.Parallel()
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

// TestMerchantOfAllocations (issue 25): naming a context's merchant
// allocates nothing; the name is made once, by WithCredentials, though
// each request asks for it at least twice (its anonymous and merchant
// rate limits), and it is the hex of the pair's identity.
func TestMerchantOfAllocations(t *testing.T) {
	ctx := WithCredentials(context.Background(), Credentials{APIKey: "ak_test_a", APISecret: "sk_test_a"})
	cv, _ := credentialsFrom(ctx)
	if m, _ := MerchantOf(ctx); m != hex.EncodeToString(cv.merchant[:]) {
		t.Fatalf("MerchantOf = %q, want the hex of %x", m, cv.merchant)
	}
	if testenv.RaceEnabled() {
		t.Skip("the race detector changes allocation counts")
	}
	if allocs := testing.AllocsPerRun(100, func() { _, _ = MerchantOf(ctx) }); allocs != 0 {
		t.Errorf("MerchantOf: %.1f allocations a call, want 0", allocs)
	}
}

// TestMerchantIdentityKeyed (issue 22): a pair's identity is an HMAC under the
// merchant key carried by the context: the same under the same key, not
// under another, never the plain SHA-256 of the pair, and the length
// prefix keeps the bytes of key and secret apart.
func TestMerchantIdentityKeyed(t *testing.T) {
	t.Parallel()
	key := func(b byte) *MerchantKey {
		t.Helper()
		k, err := NewMerchantKey(bytes.Repeat([]byte{b}, MinMerchantKeyBytes))
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	pair := Credentials{APIKey: "ak_test_a", APISecret: "sk_test_a"}
	of := func(k *MerchantKey, c Credentials) string {
		t.Helper()
		m, ok := MerchantOf(WithCredentials(WithMerchantKey(context.Background(), k), c))
		if !ok {
			t.Fatal("no merchant for a full pair")
		}
		return m
	}
	a, a2, b := of(key(1), pair), of(key(1), pair), of(key(2), pair)
	var framed []byte
	framed = binary.BigEndian.AppendUint64(framed, uint64(len(pair.APIKey)))
	plain := sha256.Sum256(append(append(framed, pair.APIKey...), pair.APISecret...))
	concat := sha256.Sum256([]byte(pair.APIKey + pair.APISecret))
	mac := hmac.New(sha256.New, bytes.Repeat([]byte{1}, MinMerchantKeyBytes))
	mac.Write([]byte(merchantIDLabel))
	mac.Write(framed)
	mac.Write([]byte(pair.APIKey + pair.APISecret))
	for _, tt := range []struct {
		name string
		ok   bool
	}{
		{"same key, same identity", a == a2},
		{"another key, another identity", a != b},
		{"not the plain SHA-256 of the framed pair", a != hex.EncodeToString(plain[:]) && b != hex.EncodeToString(plain[:])},
		{"not the SHA-256 of key||secret", a != hex.EncodeToString(concat[:])},
		{"the HMAC of label, length, key and secret", a == hex.EncodeToString(mac.Sum(nil))},
		{"framed: bytes moved from key to secret", of(key(1), Credentials{APIKey: "ak_test_", APISecret: "ask_test_a"}) != a},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if !tt.ok {
				t.Fatalf("a=%s b=%s", a, b)
			}
		})
	}
	if _, err := NewMerchantKey(make([]byte, MinMerchantKeyBytes-1)); err == nil {
		t.Error("a 31-byte key is accepted")
	}
	if s := fmt.Sprintf("%v %+v %#v %s", key(1), key(1), key(1), key(1)); strings.Contains(s, "\x01") || strings.Count(s, "redacted") != 4 {
		t.Errorf("a key prints %q", s)
	}
}
