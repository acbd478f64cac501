package sessiontoken

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The fuzz target's world is fixed, so that the coordinator and every
// worker process agree on which tokens exist: tokens minted at
// fuzzMintedAt with fuzzCreds, verified at fuzzNow by a keyring of
// fuzzKey1 and fuzzKey2. fuzzKey3 is another deployment's.
var (
	fuzzKey1     = bytes.Repeat([]byte{0x0f}, KeyBytes)
	fuzzKey2     = bytes.Repeat([]byte{0x1e}, KeyBytes)
	fuzzKey3     = bytes.Repeat([]byte{0x2d}, KeyBytes)
	fuzzMintedAt = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	fuzzNow      = fuzzMintedAt.Add(30 * time.Minute)
	fuzzCreds    = Credentials{APIKey: "ak_test_fuzzKey0000000000000000", APISecret: "sk_test_fuzzSecret000000000000000000000"}
)

// fuzzAccepted are the only tokens the fuzz keyring may accept, with the
// scope each carries. Regenerate (after a change of the claims' format)
// with SESSIONTOKEN_PRINT_SEEDS=1 go test -run TestFuzzSeedTokens -v ./sessiontoken/
var fuzzAccepted = map[string]string{
	// fuzzKey1, all
	"v4.local.YZFm5Jthqf5je6MfeHM9afagLK7GkMTuiT3tY7bkSraJiiqlILkx5qz-fnfi8x5-hWCbgrto1iYQql6MhWzLc19M_RVxLTCQIGiEkmTJHeppolBwo1eX-dHbCuJC3FA8_qD5HAFmvPM0bRZCfCFjrvZhHi6nN_pinmuRBXaxBFrT7qJbuUc8GEVYfFXTmAi3xt7TtS1lSBs042FVsWxgtt2u-yI8U66PsijZNjEasdMBwpn5S_trssdmUyDYaOUJYO3BmuGUUg2jSRSVMmUq3jcrT1PTXNAJxhuo416HTGpnlyntUQ-32D2FM9Zv.eyJraWQiOiJrNC5saWQuVHktWHBmMmtGckxULTJ5WTNqeFdlTjREd3JmV2Q1aHdianhrYzB1NHlER1kifQ": "all",
	// fuzzKey1, checkout session by reference
	"v4.local.yy6DjnAfJIpvlnRxmrvZIeOWbau1j_D5VvxqQAwEfunMDyUWbyifM2FwOUtrz7pBrdmcFGSl8MxjKUah4Df3jHu4paiKHzdJvucu2FKKQe2waRbgnEVPS8wzCiZaMnb4Q5wr4VkJ-YaQ4lHY8sDGJO45PlAxL_HTwylTspdQAnQJJHcoaaDT2QIrPDysFYW4zVxGQVKx61qKjh-MIRErdakVz83s8dYBQ7rP5OOilQOxQVuFwFx4v8cG8u0X0t5mhEqyUZ5v-pS5IERdCe6UMpfDngdLFfpg3e3ftajhi_y8uwG5e4qkx_fDNefhBKSECXEIf43FVo6M0a-xs7GC-tpmR6v7qb8.eyJraWQiOiJrNC5saWQuVHktWHBmMmtGckxULTJ5WTNqeFdlTjREd3JmV2Q1aHdianhrYzB1NHlER1kifQ": "checkoutSession:REF123",
	// fuzzKey2, checkout session pinned at minting
	"v4.local.KZCg9bniR4TNEA7-eKeGtrIodY0vBSprZg1q5RFdaJU25W2XJZGnYw2X9IVIB4F4OAKRFiOEbGD-ZTCHYOCRhhs5k6IskgKx-jvnFfRDtryNJgTFJDE0WSEBwLfldxeoOe9-WhzYe1060oYp4v00JgQWdLH7ndDoxD6N-J99Y-hBduzzS7ay_cXipcqxDVXossesO_WMNo1GQBZ0-el-x4AID2nA-pBwh-4KKf9kGB103bp-M1NgOjmlNEI23NQGissowJsa-xuovrLVho7CL24Go1O5VElcutKPtXwWzXxPYZatKamO4ccjny55EtQa4jfk8N0xj_ol9n5Bf6gnqYQQqmdbMo3Z8bw8eYsupQljDWs2Chbkx7XbfVPVPsB14co1zSbNtZ3exLpCi-bF7DmxNf6mZhVI-WY3UjXO1JvrilSdcDfcP45du9JD2FiwJuI01wT3pPfoznf12DooGIS52qaQuJEzVjmCH_07XxIHojhtB4jdJrufp9XrAKd2uGlv0zeXYzEhSzIdD1AlurCA5_rtXpmi.eyJraWQiOiJrNC5saWQuVkczNEFYNnBxT3Z3enFKZklqZy1MZ19GNkhvTFZvN2c5WThBZjNoUnEtY3QifQ": "checkoutSession:REF123",
	// fuzzKey2, payment
	"v4.local.F1Aik9DaW0Cwi5ar9XlOpg033T-r6Up9HEe_95N6CovXWBVsGHwDjD-hrEwcvaTVJ1dH-sxZ1IdkHZdFEePszvqKvrHT6GDKkMaepO1S0K3cPOM5QukmWGvTUuzBVZpPECoKq4gOi4KzQSXzvkr3e9ClO6pGT6uzjVcMSCQSecXMQz-DxX_2HN87o_m7HcBCQVem09Auqf5-mBOq2WF0oAZ4_O1BcbjfrSWb23sMUURPSA-vp2SRROKOmFJ6V2zr4-krKt4RARr-BMCNzEFJlP_FbNGBhrGMm78KxdywHlZPrvTV4vlUiyrdoCp3XBUygDcnOHxijLUBIsnV0IlE-mI7FxeTXyxQox23OuTjsSrPgxInHqk7_I7ccztaQK7h63s.eyJraWQiOiJrNC5saWQuVkczNEFYNnBxT3Z3enFKZklqZy1MZ19GNkhvTFZvN2c5WThBZjNoUnEtY3QifQ": "payment:pay_prod_00000000000000000000000000000001",
}

// fuzzForeign was minted with fuzzKey3: well formed, never accepted.
const fuzzForeign = "v4.local.yQriPs7Iku-rqmHFCc_QuCHwu8ilJgUSfjCC6X1bRf3qYQexvwYsFpXbNkskB1BnKpET3Xy0EwnOWxdI1P9EIlS0aeBDzuXtzeVRHvgIC_O-L9FXPi9TFulOW3Vm0npvPQRV4ubvDhl4Tev6zlcFWW6NV_wAr2xJ0nhqPTo68xuMZP3uCj3GvytAvg6BlEZT8RKBQwc119u_0AA_NYqehpV7no8wCHLDPcxj6rtoKhVdlJoL_YedJvB-o6N3Tk9KKg61ZC_c5huDlmKCXcarMXVMvcT3cISHySTNz7yPMoGFpvPSsCUG6vzNnDZw.eyJraWQiOiJrNC5saWQuWU1ueHpqUFFBdEl5XzF4dldzVTByaTNpMl9URVhDN25yRXg1Q09NOU13TVQifQ"

func fuzzKeyring(t testing.TB) *Keyring {
	kr, err := NewKeyring(fuzzKey1, fuzzKey2)
	if err != nil {
		t.Fatal(err)
	}
	return kr.WithClock(func() time.Time { return fuzzNow })
}

// TestFuzzSeedTokens keeps the fixed tokens current: each accepted one
// verifies with its scope, the foreign one is foreign.
func TestFuzzSeedTokens(t *testing.T) {
	t.Parallel()
	if os.Getenv("SESSIONTOKEN_PRINT_SEEDS") != "" {
		printFuzzSeeds(t)
	}
	kr := fuzzKeyring(t)
	for tok, scope := range fuzzAccepted {
		t.Run(scope, func(t *testing.T) {
			t.Parallel()
			c, err := kr.Verify(tok)
			if err != nil {
				t.Fatalf("seed token refused (regenerate the seeds, see fuzzAccepted): %v", err)
			}
			if c.Credentials != fuzzCreds || c.Scope.String() != scope {
				t.Errorf("seed token carries scope %v", c.Scope)
			}
		})
	}
	t.Run("foreign", func(t *testing.T) {
		if _, err := kr.Verify(fuzzForeign); !isVerifyError(err) || kindOf(err) != ErrForeign.Error() {
			t.Errorf("foreign seed: %v, want ErrForeign", err)
		}
	})
}

func printFuzzSeeds(t *testing.T) {
	at := func() time.Time { return fuzzMintedAt }
	co, _ := OneCheckoutSession("REF123")
	pinned, _ := co.withSession(CheckoutSessionIDs{ID: "pay_prod_0123456789abcdef0123456789abcdef", Reference: "REF123", PaymentID: "pay_prod_fedcba9876543210fedcba9876543210"})
	pay, _ := OnePayment("pay_prod_00000000000000000000000000000001")
	for _, seed := range []struct {
		key   []byte
		scope Scope
	}{{fuzzKey1, AllReads()}, {fuzzKey1, co}, {fuzzKey2, pinned}, {fuzzKey2, pay}, {fuzzKey3, AllReads()}} {
		kr, _ := NewKeyring(seed.key)
		tok, _, err := kr.WithClock(at).Mint(fuzzCreds, seed.scope, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("%q: %q,\n", tok, seed.scope.String())
	}
}

// reLongRun finds runs of the token alphabet long enough not to be a word
// of an error message.
var reLongRun = regexp.MustCompile(`[A-Za-z0-9_-]{20,}`)

// FuzzVerify: Verify never panics; it accepts only a token byte for byte
// as minted; every refusal is one of its errors, whose message holds no
// part of the input.
func FuzzVerify(f *testing.F) {
	kr := fuzzKeyring(f)
	seeds := []string{"", Prefix, Prefix + ".", "v4.public.abc.def", "v2.local.AAAA", fuzzForeign,
		Prefix + strings.Repeat("A", 86) + ".eyJraWQiOiJ4In0", Prefix + "AAAA.AAAA"}
	for tok := range fuzzAccepted {
		body, foot, _ := strings.Cut(strings.TrimPrefix(tok, Prefix), ".")
		seeds = append(seeds, tok, tok+".", tok[:len(tok)-1], Prefix+body, Prefix+body+"."+foot+"A",
			tok[:40]+"\n"+tok[40:], strings.ToUpper(tok[:9])+tok[9:])
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := kr.Verify(s)
		if err == nil {
			scope, ok := fuzzAccepted[s]
			if !ok {
				t.Fatalf("accepted a token that was never minted: %q", s)
			}
			if c.Credentials != fuzzCreds || c.Scope.String() != scope || !c.ExpiresAt.Equal(fuzzMintedAt.Add(time.Hour)) {
				t.Fatalf("seed token verified to other claims: %v", c)
			}
			return
		}
		if !isVerifyError(err) {
			t.Fatalf("error %v is not one of Verify's", err)
		}
		msg := err.Error()
		for _, run := range reLongRun.FindAllString(s, -1) {
			if strings.Contains(msg, run) {
				t.Fatalf("error %q holds part of the input", msg)
			}
		}
		if strings.Contains(msg, fuzzCreds.APISecret) {
			t.Fatalf("error %q holds the secret", msg)
		}
	})
}
