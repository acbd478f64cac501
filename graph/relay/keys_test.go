package relay

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// TestKeyRotation: the first key signs and every key verifies, so that
// [new, old] accepts old's cursors; a key that is dropped takes its
// cursors with it; and a cursor is bound to its credential pair.
func TestKeyRotation(t *testing.T) {
	t.Parallel()
	pos := Position{RestCursor: "page-2", Skip: 5}
	oldOnly := mustKeys(t, testKeyA)
	rotated := mustKeys(t, testKeyB, testKeyA)
	newOnly := mustKeys(t, testKeyB)
	const key, secret = "ak_test_merchant", "sk_test_secret"
	oldCursor := oldOnly.For(key, secret).Encode(pos)
	newCursor := rotated.For(key, secret).Encode(pos)
	for _, tc := range []struct {
		name   string
		keys   *Keys
		cursor string
		ok     bool
	}{
		{"old key's cursor under [new, old]", rotated, oldCursor, true},
		{"[new, old] signs with new", newOnly, newCursor, true},
		{"new key's cursor under old only", oldOnly, newCursor, false},
		{"retired key's cursor under new only", newOnly, oldCursor, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.keys.For(key, secret).Decode(tc.cursor)
			if tc.ok && (err != nil || got != pos) {
				t.Errorf("Decode = %+v, %v; want %+v", got, err, pos)
			}
			if !tc.ok && err != ErrBadCursor {
				t.Errorf("Decode = %+v, %v; want ErrBadCursor", got, err)
			}
		})
	}
	for _, tc := range []struct{ name, key, secret string }{
		{"other key", "ak_test_merchanu", secret},
		{"other secret", key, "sk_test_secreu"},
		// The pair is length-prefixed: moving bytes between its halves
		// is another pair.
		{"bytes moved from key to secret", "ak_test_mercha", "nt" + secret},
		{"bytes moved from secret to key", key + "s", secret[1:]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := rotated.For(tc.key, tc.secret).Decode(newCursor); err != ErrBadCursor {
				t.Errorf("a cursor of another credential pair decoded: %v", err)
			}
		})
	}
}

func TestParseKeys(t *testing.T) {
	t.Parallel()
	raw := testKeyA
	for _, tc := range []struct {
		name, in string
		n        int
	}{
		{"hex", hex.EncodeToString(raw), 1},
		{"base64", base64.StdEncoding.EncodeToString(raw), 1},
		{"base64 unpadded", base64.RawStdEncoding.EncodeToString(raw), 1},
		{"base64url", base64.URLEncoding.EncodeToString(append(raw, 0xfb, 0xff)), 1},
		{"two, spaced", hex.EncodeToString(raw) + " , " + base64.StdEncoding.EncodeToString(testKeyB), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := ParseKeys(tc.in)
			if err != nil || len(k.keys) != tc.n {
				t.Fatalf("ParseKeys: %v, %v", k, err)
			}
			if string(k.keys[0]) != string(raw) && tc.name != "base64url" {
				t.Errorf("first key %x, want %x", k.keys[0], raw)
			}
		})
	}
	secretish := base64.StdEncoding.EncodeToString(raw[:31])
	for _, tc := range []struct{ name, in string }{
		{"empty", ""},
		{"empty element", hex.EncodeToString(raw) + ","},
		{"31 bytes", secretish},
		{"not base64", strings.Repeat("!", 44)},
	} {
		t.Run("refuses "+tc.name, func(t *testing.T) {
			_, err := ParseKeys(tc.in)
			if err == nil {
				t.Fatal("accepted")
			}
			if tc.in != "" && strings.Contains(err.Error(), tc.in) {
				t.Errorf("error %q echoes the key", err)
			}
		})
	}
}

func TestRandomKeysDiffer(t *testing.T) {
	t.Parallel()
	a, b := RandomKeys(), RandomKeys()
	c := a.For("k", "s").Encode(Position{Skip: 1})
	if _, err := b.For("k", "s").Decode(c); err != ErrBadCursor {
		t.Fatalf("two random keys agree: %v", err)
	}
}

// TestKeysNeverPrinted: neither keys nor a signer's MAC state show in any
// textual form (a configuration printed with %+v, a log attribute).
func TestKeysNeverPrinted(t *testing.T) {
	t.Parallel()
	k := mustKeys(t, testKeyA)
	s := k.For("ak_test_merchant", "sk_test_secret")
	_ = s.Encode(Position{Skip: 1}) // the signer now holds MAC state
	var logs strings.Builder
	slog.New(slog.NewTextHandler(&logs, nil)).Info("x", "keys", k, "signer", s)
	for _, tc := range []struct{ name, text string }{
		{"%v", fmt.Sprintf("%v", k)},
		{"%+v", fmt.Sprintf("%+v", k)},
		{"%#v", fmt.Sprintf("%#v", k)},
		{"%x", fmt.Sprintf("%x", k)},
		{"%s", fmt.Sprintf("%s", k)},
		{"struct %+v", fmt.Sprintf("%+v", struct{ K *Keys }{k})},
		{"signer %+v", fmt.Sprintf("%+v", s)},
		{"signer %#v", fmt.Sprintf("%#v", s)},
		{"slog", logs.String()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if strings.Contains(tc.text, string(testKeyA)) || strings.Contains(tc.text, hex.EncodeToString(testKeyA)) ||
				strings.Contains(tc.text, "161 161") || strings.Contains(strings.ToLower(tc.text), "a1a1") ||
				strings.Contains(tc.text, "sk_test_secret") || !strings.Contains(tc.text, "redacted") {
				t.Errorf("%s", tc.text)
			}
		})
	}
}
