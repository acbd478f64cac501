package sessiontoken

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"
)

// The tests' keys: distinct, fixed, never all zero.
var (
	testKeyA = bytes.Repeat([]byte{0xa1}, KeyBytes)
	testKeyB = bytes.Repeat([]byte{0xb2}, KeyBytes)
	testKeyC = bytes.Repeat([]byte{0xc3}, KeyBytes)
)

// testCreds is shaped like the sandbox's pairs; the secret is searched for
// in tokens, errors and responses.
var testCreds = Credentials{
	APIKey:    "ak_test_syOsiXRwtvDHX4UqbyKbtncP",
	APISecret: "sk_test_R0d7OI1Rhhr2fp0BwbovqiuFfgOvp9Jv",
}

// testStart is the tests' "now".
var testStart = time.Date(2026, 11, 21, 9, 30, 0, 0, time.UTC)

// fakeClock is a settable clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock { return &fakeClock{t: testStart} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// keyring returns a keyring of keys on clock.
func keyring(t testing.TB, clock *fakeClock, keys ...[]byte) *Keyring {
	t.Helper()
	kr, err := NewKeyring(keys...)
	if err != nil {
		t.Fatalf("NewKeyring: %v", err)
	}
	return kr.WithClock(clock.Now)
}

// mustScope builds a scope or fails.
func mustScope(t testing.TB, kind ScopeKind, id string) Scope {
	t.Helper()
	s, err := NewScope(kind, id)
	if err != nil {
		t.Fatalf("NewScope(%q, %q): %v", kind, id, err)
	}
	return s
}

// mint mints or fails.
func mint(t testing.TB, kr *Keyring, s Scope, ttl time.Duration) string {
	t.Helper()
	tok, _, err := kr.Mint(testCreds, s, ttl)
	if err != nil {
		t.Fatalf("Mint: %v", err)
	}
	return tok
}

// verifyErrors are the errors Verify may return.
var verifyErrors = []error{ErrMalformed, ErrForeign, ErrTampered, ErrExpired}

// isVerifyError tells whether err is one of Verify's errors.
func isVerifyError(err error) bool {
	for _, e := range verifyErrors {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// A checkout session of the tests, as the REST API would name it.
var testSession = CheckoutSessionIDs{
	ID:        "pay_prod_0123456789abcdef0123456789abcdef",
	Reference: "REF123",
	PaymentID: "pay_prod_fedcba9876543210fedcba9876543210",
}

// edge fills what the composition root hands NewHandler: the credential
// header names and the contract's error writer (the gateway's are
// restclient.HeaderAPIKey, restclient.HeaderAPISecret and gqlhttp.WriteError).
func edge(o Options) Options {
	o.KeyHeader, o.SecretHeader, o.WriteError = "x-api-key", "x-api-secret", testWriteError
	return o
}

// testWriteError writes the contract's GraphQL-shaped error body.
func testWriteError(w http.ResponseWriter, status int, code, msg string) {
	body, _ := json.Marshal(map[string]any{"errors": []any{map[string]any{
		"message": msg, "extensions": map[string]string{"code": code}}}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
