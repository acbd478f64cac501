package relay

import (
	"bytes"
	"strings"
	"testing"

	"paygraph/restclient"
)

// testKeys are fixed keys, so that the tests' cursors are reproducible.
var (
	testKeyA = bytes.Repeat([]byte{0xA1}, MinKeyBytes)
	testKeyB = bytes.Repeat([]byte{0xB2}, MinKeyBytes)
)

func mustKeys(t testing.TB, keys ...[]byte) *Keys {
	t.Helper()
	k, err := NewKeys(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func testSigner(t testing.TB) *Signer {
	return mustKeys(t, testKeyA).For("ak_test_merchant", "sk_test_secret")
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	s := testSigner(t)
	for _, tc := range []struct {
		name string
		p    Position
	}{
		{"first page", Position{}},
		{"skip one", Position{Skip: 1}},
		{"REST cursor", Position{RestCursor: "cGF5X3Byb2RfMTIz", Skip: 0, Status: restclient.StatusFailed}},
		{"URL characters", Position{RestCursor: "a/b?c=d&e", Skip: MaxSkip, Status: restclient.StatusRefunded}},
		{"longest REST cursor", Position{RestCursor: strings.Repeat("x", maxRestCursor), Skip: 42, Status: restclient.StatusPending}},
		{"non-ASCII", Position{RestCursor: "ünïcødé", Skip: 7, Status: restclient.StatusSucceeded}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := s.Encode(tc.p)
			if strings.ContainsAny(c, "+/=") {
				t.Errorf("%q is not URL-safe", c)
			}
			if c != s.Encode(tc.p) {
				t.Errorf("encoding is not deterministic")
			}
			got, err := s.Decode(c)
			if err != nil || got != tc.p {
				t.Errorf("Decode(Encode(%+v)) = %+v, %v", tc.p, got, err)
			}
		})
	}
}

func TestDecodeRefuses(t *testing.T) {
	t.Parallel()
	s := testSigner(t)
	valid := s.Encode(Position{RestCursor: "abc", Skip: 3, Status: restclient.StatusCancelled})
	flipped := []byte(valid)
	flipped[2] ^= 1
	for _, tc := range []struct{ name, cursor string }{
		{"empty", ""},
		{"not base64", "***"},
		{"too short", "AQAB"},
		{"flipped bit", string(flipped)},
		{"truncated", valid[:len(valid)-2]},
		{"appended", valid + "AA"},
		{"line break inside", valid[:4] + "\n" + valid[4:]},
		{"huge", strings.Repeat("A", 10000)},
		{"skip over limit", s.Encode(Position{Skip: MaxSkip + 1})},
		{"bad version", sign(s, []byte{9, 0, 0})},
		{"version 1", sign(s, []byte{1, 0, 0})},
		{"bad status", sign(s, []byte{cursorVersion, 200, 0})},
		{"non-minimal skip", sign(s, []byte{cursorVersion, 0, 0x80, 0x00})},
		{"another merchant's", mustKeys(t, testKeyA).For("ak_test_other", "sk_test_secret").Encode(Position{Skip: 3})},
		{"another gateway key", mustKeys(t, testKeyB).For("ak_test_merchant", "sk_test_secret").Encode(Position{Skip: 3})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if p, err := s.Decode(tc.cursor); err != ErrBadCursor {
				t.Errorf("Decode(%q) = %+v, %v; want ErrBadCursor", tc.cursor, p, err)
			}
		})
	}
}

// sign builds a cursor with a correct tag around any body, as only the
// holder of the key could.
func sign(s *Signer, body []byte) string {
	raw := append(make([]byte, 0, len(body)+64), body...)
	s.mu.Lock()
	raw = s.sumLocked(0, raw)
	s.mu.Unlock()
	return cursorText.EncodeToString(raw)
}
