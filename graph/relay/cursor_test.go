package relay

import (
	"strings"
	"testing"

	"paygraph/restclient"
)

func TestRoundTrip(t *testing.T) {
	for _, p := range []Position{
		{},
		{Skip: 1},
		{RestCursor: "cGF5X3Byb2RfMTIz", Skip: 0, Status: restclient.StatusFailed},
		{RestCursor: "a/b?c=d&e", Skip: MaxSkip, Status: restclient.StatusRefunded},
		{RestCursor: strings.Repeat("x", maxRestCursor), Skip: 42, Status: restclient.StatusPending},
		{RestCursor: "ünïcødé", Skip: 7, Status: restclient.StatusSucceeded},
	} {
		s := p.Encode()
		if strings.ContainsAny(s, "+/=") {
			t.Errorf("%q is not URL-safe", s)
		}
		got, err := Decode(s)
		if err != nil || got != p {
			t.Errorf("Decode(Encode(%+v)) = %+v, %v", p, got, err)
		}
	}
}

func TestDecodeRefuses(t *testing.T) {
	valid := Position{RestCursor: "abc", Skip: 3, Status: restclient.StatusCancelled}.Encode()
	flipped := []byte(valid)
	flipped[2] ^= 1
	for name, s := range map[string]string{
		"empty":           "",
		"not base64":      "***",
		"too short":       "AQAB",
		"flipped bit":     string(flipped),
		"truncated":       valid[:len(valid)-2],
		"appended":        valid + "AA",
		"huge":            strings.Repeat("A", 10000),
		"skip over limit": Position{Skip: MaxSkip + 1}.Encode(),
		"bad version":     forge([]byte{9, 0, 0}),
		"bad status":      forge([]byte{cursorVersion, 200, 0}),
	} {
		if p, err := Decode(s); err == nil {
			t.Errorf("%s: Decode(%q) = %+v, want an error", name, s, p)
		}
	}
}

// forge builds a cursor with a correct checksum around any body.
func forge(body []byte) string {
	return encodeRaw(body)
}
