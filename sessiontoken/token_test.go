package sessiontoken

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"aidanwoods.dev/go-paseto"
)

func TestMintVerifyRoundTrip(t *testing.T) {
	t.Parallel()
	clock := newClock()
	kr := keyring(t, clock, testKeyA)
	checkout := mustScope(t, ScopeCheckoutSession, "REF123")
	pinned, err := checkout.withSession(testSession)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		scope Scope
	}{
		{"all", AllReads()},
		{"checkout session by reference", checkout},
		{"checkout session by id", mustScope(t, ScopeCheckoutSession, testSession.ID)},
		{"checkout session pinned", pinned},
		{"payment", mustScope(t, ScopePayment, "pay_prod_00000000000000000000000000000001")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tok, exp, err := kr.Mint(testCreds, tt.scope, 10*time.Minute)
			if err != nil {
				t.Fatalf("Mint: %v", err)
			}
			if !strings.HasPrefix(tok, Prefix) {
				t.Errorf("token does not start with %q", Prefix)
			}
			if want := testStart.Add(10 * time.Minute); !exp.Equal(want) {
				t.Errorf("expiresAt = %v, want %v", exp, want)
			}
			c, err := kr.Verify(tok)
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if c.Credentials != testCreds {
				t.Error("Verify returned other credentials")
			}
			if c.Scope.Kind() != tt.scope.Kind() || c.Scope.ID() != tt.scope.ID() {
				t.Errorf("scope = %v, want %v", c.Scope, tt.scope)
			}
			wantIDs, wantKnown := tt.scope.facts.get()
			if gotIDs, gotKnown := c.Scope.facts.get(); gotIDs != wantIDs || gotKnown != wantKnown {
				t.Errorf("session ids = %+v (known %v), want %+v (known %v)", gotIDs, gotKnown, wantIDs, wantKnown)
			}
			if !c.ExpiresAt.Equal(exp) {
				t.Errorf("ExpiresAt = %v, want %v", c.ExpiresAt, exp)
			}
			if c.Merchant != MerchantOf(testCreds.APIKey) {
				t.Errorf("Merchant = %q, want %q", c.Merchant, MerchantOf(testCreds.APIKey))
			}
			if len(tok) > MaxTokenBytes {
				t.Errorf("token is %d bytes, over MaxTokenBytes", len(tok))
			}
		})
	}
}

func TestMintRefuses(t *testing.T) {
	t.Parallel()
	kr := keyring(t, newClock(), testKeyA)
	long := strings.Repeat("x", MaxCredentialBytes+1)
	tests := []struct {
		name  string
		creds Credentials
		scope Scope
		ttl   time.Duration
	}{
		{"no key", Credentials{APISecret: "s"}, AllReads(), time.Minute},
		{"no secret", Credentials{APIKey: "k"}, AllReads(), time.Minute},
		{"key too long", Credentials{APIKey: long, APISecret: "s"}, AllReads(), time.Minute},
		{"secret too long", Credentials{APIKey: "k", APISecret: long}, AllReads(), time.Minute},
		{"zero scope", testCreds, Scope{}, time.Minute},
		{"zero ttl", testCreds, AllReads(), 0},
		{"negative ttl", testCreds, AllReads(), -time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tok, _, err := kr.Mint(tt.creds, tt.scope, tt.ttl)
			if err == nil || tok != "" {
				t.Fatalf("Mint = %q, %v; want an error", tok, err)
			}
			if strings.Contains(err.Error(), "sk_test") || strings.Contains(err.Error(), long) {
				t.Errorf("error %q holds a credential", err)
			}
		})
	}
}

// The largest token Mint can make stays under MaxTokenBytes, so Verify's
// bound never refuses one of ours.
func TestLargestTokenFits(t *testing.T) {
	t.Parallel()
	kr := keyring(t, newClock(), testKeyA)
	id := strings.Repeat("i", MaxIDBytes)
	s, err := mustScope(t, ScopeCheckoutSession, id).withSession(CheckoutSessionIDs{
		ID: id, Reference: strings.Repeat("r", MaxIDBytes), PaymentID: strings.Repeat("p", MaxIDBytes)})
	if err != nil {
		t.Fatal(err)
	}
	c := Credentials{APIKey: strings.Repeat("k", MaxCredentialBytes), APISecret: strings.Repeat("s", MaxCredentialBytes)}
	tok, _, err := kr.Mint(c, s, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("largest token: %d bytes (bound %d)", len(tok), MaxTokenBytes)
	if len(tok) > MaxTokenBytes {
		t.Fatalf("largest token is %d bytes, over MaxTokenBytes %d", len(tok), MaxTokenBytes)
	}
	if _, err := kr.Verify(tok); err != nil {
		t.Fatalf("Verify of the largest token: %v", err)
	}
}

func TestVerifyExpiry(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		advance time.Duration
		wantErr error
	}{
		{"just minted", 0, nil},
		{"a millisecond before expiry", 10*time.Minute - time.Millisecond, nil},
		{"at expiry", 10 * time.Minute, ErrExpired},
		{"a day later", 24 * time.Hour, ErrExpired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clock := newClock()
			kr := keyring(t, clock, testKeyA)
			tok := mint(t, kr, AllReads(), 10*time.Minute)
			clock.Advance(tt.advance)
			_, err := kr.Verify(tok)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("Verify after %v: %v, want %v", tt.advance, err, tt.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "expired at 2026-11-21T09:40:00.000Z") {
				t.Errorf("message %q does not say when it expired", err)
			}
		})
	}
}

// Every single-byte change of a token, at every position, is refused with
// one of Verify's errors; within the payload it is ErrTampered.
func TestVerifyTamperedEveryByte(t *testing.T) {
	t.Parallel()
	kr := keyring(t, newClock(), testKeyA)
	pinned, _ := mustScope(t, ScopeCheckoutSession, "REF123").withSession(testSession)
	for _, s := range []Scope{AllReads(), pinned} {
		tok := mint(t, kr, s, time.Hour)
		body, _, _ := strings.Cut(strings.TrimPrefix(tok, Prefix), ".")
		payloadEnd := len(Prefix) + len(body) // index of the '.' before the footer
		mutations := []struct {
			name string
			make func(i int) string
		}{
			{"replaced by another base64url letter", func(i int) string {
				c := byte('A')
				if tok[i] == 'A' {
					c = 'B'
				}
				return tok[:i] + string(c) + tok[i+1:]
			}},
			{"low bit flipped", func(i int) string { return tok[:i] + string(tok[i]^1) + tok[i+1:] }},
			{"replaced by a dot", func(i int) string { return tok[:i] + "." + tok[i+1:] }},
			{"newline inserted", func(i int) string { return tok[:i] + "\n" + tok[i:] }},
			{"deleted", func(i int) string { return tok[:i] + tok[i+1:] }},
			{"duplicated", func(i int) string { return tok[:i+1] + tok[i:] }},
		}
		for _, m := range mutations {
			t.Run(s.String()+"/"+m.name, func(t *testing.T) {
				t.Parallel()
				counts := map[string]int{}
				for i := range len(tok) {
					bad := m.make(i)
					if bad == tok {
						continue // a dot replaced by a dot
					}
					_, err := kr.Verify(bad)
					if err == nil {
						t.Fatalf("position %d: a modified token was accepted", i)
					}
					if !isVerifyError(err) {
						t.Fatalf("position %d: error %v is not one of Verify's", i, err)
					}
					counts[kindOf(err)]++
					// Inside the payload, with the same length and alphabet, only the tag can tell.
					if m.name == "replaced by another base64url letter" && i >= len(Prefix) && i < payloadEnd-1 && !errors.Is(err, ErrTampered) {
						t.Errorf("position %d (payload): %v, want ErrTampered", i, err)
					}
				}
				t.Logf("%d positions: %v", len(tok), counts)
			})
		}
	}
	t.Run("appended byte", func(t *testing.T) {
		tok := mint(t, kr, AllReads(), time.Hour)
		for _, suffix := range []string{"A", ".", "=", "\n", " ", ".AAAA"} {
			if _, err := kr.Verify(tok + suffix); err == nil {
				t.Errorf("token + %q accepted", suffix)
			}
		}
	})
}

// kindOf names which of Verify's errors err is.
func kindOf(err error) string {
	for _, e := range verifyErrors {
		if errors.Is(err, e) {
			return e.Error()
		}
	}
	return "other"
}

func TestKeyRotation(t *testing.T) {
	t.Parallel()
	clock := newClock()
	minter := keyring(t, clock, testKeyA)
	tok := mint(t, minter, AllReads(), time.Hour)
	tests := []struct {
		name    string
		keys    [][]byte
		wantErr error
	}{
		{"same key", [][]byte{testKeyA}, nil},
		{"new key first, old key kept", [][]byte{testKeyB, testKeyA}, nil},
		{"old key first", [][]byte{testKeyA, testKeyB}, nil},
		{"old key removed: foreign", [][]byte{testKeyB}, ErrForeign},
		{"other keys only: foreign", [][]byte{testKeyB, testKeyC}, ErrForeign},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := keyring(t, clock, tt.keys...).Verify(tok)
			if tt.wantErr == nil {
				if err != nil || c.Credentials != testCreds {
					t.Fatalf("Verify: %v", err)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Verify: %v, want %v", err, tt.wantErr)
			}
		})
	}
	t.Run("new tokens are minted with the first key", func(t *testing.T) {
		rotated := keyring(t, clock, testKeyB, testKeyA)
		tok := mint(t, rotated, AllReads(), time.Hour)
		if _, err := keyring(t, clock, testKeyB).Verify(tok); err != nil {
			t.Errorf("a token of [B, A] is refused by [B]: %v", err)
		}
		if _, err := keyring(t, clock, testKeyA).Verify(tok); !errors.Is(err, ErrForeign) {
			t.Errorf("a token of [B, A] verified by [A]: %v, want ErrForeign", err)
		}
	})
	t.Run("footer swapped for another key's", func(t *testing.T) {
		both := keyring(t, clock, testKeyA, testKeyB)
		tokB := mint(t, keyring(t, clock, testKeyB), AllReads(), time.Hour)
		bodyA, _, _ := strings.Cut(tok, "."+base64.RawURLEncoding.EncodeToString(both.keys[0].footer))
		swapped := bodyA + "." + base64.RawURLEncoding.EncodeToString(both.keys[1].footer)
		if swapped == tokB || !strings.Contains(swapped, ".") {
			t.Fatal("test setup: swap failed")
		}
		if _, err := both.Verify(swapped); !errors.Is(err, ErrTampered) {
			t.Errorf("A's payload under B's key id: %v, want ErrTampered", err)
		}
	})
}

// The credential pair exists only in the encrypted payload: neither half
// is in the token, its decoded footer or its decoded payload bytes.
func TestSecretNotInToken(t *testing.T) {
	t.Parallel()
	kr := keyring(t, newClock(), testKeyA)
	pinned, _ := mustScope(t, ScopeCheckoutSession, "REF123").withSession(testSession)
	for _, s := range []Scope{AllReads(), pinned, mustScope(t, ScopePayment, "pay_prod_1")} {
		t.Run(s.String(), func(t *testing.T) {
			t.Parallel()
			tok := mint(t, kr, s, time.Hour)
			body, foot, ok := strings.Cut(strings.TrimPrefix(tok, Prefix), ".")
			if !ok {
				t.Fatal("token has no footer")
			}
			footer, err := base64.RawURLEncoding.DecodeString(foot)
			if err != nil {
				t.Fatal(err)
			}
			payload, err := base64.RawURLEncoding.DecodeString(body)
			if err != nil {
				t.Fatal(err)
			}
			for _, part := range []struct{ name, text string }{
				{"token", tok}, {"decoded footer", string(footer)}, {"decoded payload", string(payload)},
			} {
				for _, secret := range []string{testCreds.APISecret, testCreds.APIKey, testCreds.APISecret[8:], string(testKeyA)} {
					if strings.Contains(part.text, secret) {
						t.Errorf("the %s holds a credential or the key", part.name)
					}
				}
			}
			var f map[string]any
			if err := json.Unmarshal(footer, &f); err != nil || len(f) != 1 || !strings.HasPrefix(fmt.Sprint(f["kid"]), "k4.lid.") {
				t.Errorf("footer = %s, want only {\"kid\": \"k4.lid.…\"}", footer)
			}
			if strings.Contains(string(implicit), "sk_") {
				t.Error("the implicit assertion holds a secret")
			}
		})
	}
}

func TestVerifyErrorsSayWhichWithoutTheToken(t *testing.T) {
	t.Parallel()
	clock := newClock()
	kr := keyring(t, clock, testKeyA)
	tok := mint(t, kr, AllReads(), time.Minute)
	foreign := mint(t, keyring(t, clock, testKeyB), AllReads(), time.Minute)
	swap := byte('A')
	if tok[20] == 'A' {
		swap = 'B'
	}
	tampered := tok[:20] + string(swap) + tok[21:]
	expiredClock := newClock()
	expiredClock.Advance(time.Hour)
	tests := []struct {
		name, token string
		kr          *Keyring
		want        error
		says        string
	}{
		{"empty", "", kr, ErrMalformed, "malformed"},
		{"another version", "v2.local." + strings.TrimPrefix(tok, Prefix), kr, ErrMalformed, "malformed"},
		{"public purpose", "v4.public." + strings.TrimPrefix(tok, Prefix), kr, ErrMalformed, "malformed"},
		{"no footer", strings.SplitAfterN(tok, ".", 3)[0] + strings.SplitAfterN(tok, ".", 3)[1] + strings.Split(tok, ".")[2], kr, ErrMalformed, "malformed"},
		{"empty footer", strings.Join(strings.Split(tok, ".")[:3], ".") + ".", kr, ErrMalformed, "malformed"},
		{"too long", tok + strings.Repeat("A", MaxTokenBytes), kr, ErrMalformed, "longer than"},
		{"short payload", Prefix + "AAAA." + strings.Split(tok, ".")[3], kr, ErrMalformed, "too short"},
		{"foreign", foreign, kr, ErrForeign, "not made with a key of this gateway"},
		{"tampered", tampered, kr, ErrTampered, "modified"},
		{"expired", tok, kr.WithClock(expiredClock.Now), ErrExpired, "expired"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := tt.kr.Verify(tt.token)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Verify: %v, want %v", err, tt.want)
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.says) {
				t.Errorf("message %q does not say %q", msg, tt.says)
			}
			if body := strings.TrimPrefix(tt.token, Prefix); len(body) > 8 && strings.Contains(msg, body[:8]) {
				t.Errorf("message %q holds part of the token", msg)
			}
			if strings.Contains(msg, testCreds.APISecret) || strings.Contains(msg, testCreds.APIKey) {
				t.Errorf("message %q holds a credential", msg)
			}
		})
	}
}

func TestCredentialsNeverPrinted(t *testing.T) {
	t.Parallel()
	c := Credentials{APIKey: "ak_test_KEYKEYKEY", APISecret: "sk_test_SECRETSECRET"}
	claims := Claims{Credentials: c, Scope: AllReads(), Merchant: MerchantOf(c.APIKey)}
	var logged strings.Builder
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("x", "creds", c, "claims", claims)
	j, _ := json.Marshal(claims)
	forms := map[string]string{
		"%v": fmt.Sprintf("%v", c), "%+v": fmt.Sprintf("%+v", c), "%#v": fmt.Sprintf("%#v", c),
		"%s": fmt.Sprintf("%s", c), "%q": fmt.Sprintf("%q", c), "%x": fmt.Sprintf("%x", c),
		"claims %+v": fmt.Sprintf("%+v", claims), "claims %#v": fmt.Sprintf("%#v", claims),
		"slog": logged.String(), "json": string(j),
	}
	for name, s := range forms {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if strings.Contains(s, "SECRET") || strings.Contains(s, "KEYKEY") {
				t.Errorf("%s prints a credential: %s", name, s)
			}
		})
	}
}

func TestMerchantOf(t *testing.T) {
	t.Parallel()
	a, b := MerchantOf("ak_test_aaaa"), MerchantOf("ak_test_bbbb")
	if a == b {
		t.Error("two keys, one merchant")
	}
	if a != MerchantOf("ak_test_aaaa") {
		t.Error("not stable")
	}
	if len(a) != 18 || !strings.HasPrefix(a, "m_") || strings.Contains(a, "aaaa") {
		t.Errorf("MerchantOf = %q, want m_ and 16 hex digits, without the key", a)
	}
}

// Per-request cost of a token: Verify runs once per /graphql request.
func BenchmarkVerify(b *testing.B) {
	kr := keyring(b, newClock(), testKeyA, testKeyB)
	pinned, _ := mustScope(b, ScopeCheckoutSession, "REF123").withSession(testSession)
	tok := mint(b, kr, pinned, time.Hour)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := kr.Verify(tok); err != nil {
			b.Fatal(err)
		}
	}
}

// A refusal costs no decryption (what a flood of garbage tokens costs).
func BenchmarkVerifyForeign(b *testing.B) {
	tok := mint(b, keyring(b, newClock(), testKeyC), AllReads(), time.Hour)
	kr := keyring(b, newClock(), testKeyA, testKeyB)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := kr.Verify(tok); err == nil {
			b.Fatal("accepted")
		}
	}
}

func BenchmarkMint(b *testing.B) {
	kr := keyring(b, newClock(), testKeyA)
	b.ReportAllocs()
	for b.Loop() {
		mint(b, kr, AllReads(), time.Hour)
	}
}

// A token carries its level through Mint and Verify; AtMost lowers it and
// never raises it.
func TestTokenCustomerData(t *testing.T) {
	t.Parallel()
	clock := newClock()
	kr := keyring(t, clock, testKeyA)
	for _, level := range []CustomerData{CustomerDataNone, CustomerDataMasked, CustomerDataFull} {
		t.Run(level.String(), func(t *testing.T) {
			t.Parallel()
			tok := mint(t, kr, mustScope(t, ScopePayment, "pay_1").WithCustomerData(level), time.Minute)
			c, err := kr.Verify(tok)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Scope.CustomerData(); got != level {
				t.Errorf("verified level %v, want %v", got, level)
			}
			for _, max := range []CustomerData{CustomerDataNone, CustomerDataMasked, CustomerDataFull} {
				if got, want := c.Scope.AtMost(max).CustomerData(), min(level, max); got != want {
					t.Errorf("AtMost(%v) = %v, want %v", max, got, want)
				}
			}
		})
	}
	if got := (Scope{}).CustomerData(); got != CustomerDataNone {
		t.Errorf("the zero Scope reads %v, want none", got)
	}
}

// A token of the first claims format (implicit assertion v1, no level),
// minted before the level existed, still verifies, at its scope's default
// level; a v1-format token sealed without its level is not accepted as v2.
func TestTokenV1ReadsTheDefaultLevel(t *testing.T) {
	t.Parallel()
	clock := newClock()
	kr := keyring(t, clock, testKeyA)
	claims, _ := json.Marshal(map[string]any{
		"exp": testStart.Add(time.Minute), "iat": testStart, "key": testCreds.APIKey, "secret": testCreds.APISecret,
		"scope": map[string]string{"kind": "all"},
	})
	seal := func(implicitAssertion []byte, claims []byte) string {
		tok, err := paseto.NewTokenFromClaimsJSON(claims, kr.keys[0].footer)
		if err != nil {
			t.Fatal(err)
		}
		return tok.V4Encrypt(kr.keys[0].key, implicitAssertion)
	}
	c, err := kr.Verify(seal(implicitV1, claims))
	if err != nil {
		t.Fatalf("a v1 token: %v", err)
	}
	if got := c.Scope.CustomerData(); got != defaultCustomerData {
		t.Errorf("a v1 token reads %v, want its scope's default", got)
	}
	if _, err := kr.Verify(seal(implicit, claims)); !errors.Is(err, ErrMalformed) {
		t.Errorf("a v2 token without a level: %v, want ErrMalformed", err)
	}
	withLevel, _ := json.Marshal(map[string]any{
		"exp": testStart.Add(time.Minute), "iat": testStart, "key": testCreds.APIKey, "secret": testCreds.APISecret,
		"scope": map[string]string{"kind": "all"}, "customerData": "full",
	})
	if _, err := kr.Verify(seal(implicitV1, withLevel)); !errors.Is(err, ErrMalformed) {
		t.Errorf("a v1 token with a level: %v, want ErrMalformed", err)
	}
}
