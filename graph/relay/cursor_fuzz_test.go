package relay

import (
	"encoding/base64"
	"strings"
	"testing"

	"paygraph/restclient"
)

// FuzzDecode feeds arbitrary text to the cursor decoder. Invariants: it
// never panics; it either refuses with ErrBadCursor or returns a position
// within bounds (Skip 0..MaxSkip, a known status, a REST cursor no longer
// than the limit) that survives Encode/Decode unchanged.
func FuzzDecode(f *testing.F) {
	for _, p := range []Position{
		{},
		{Skip: 1},
		{RestCursor: "cGF5X3Byb2RfMTIz", Skip: 7, Status: restclient.StatusFailed},
		{RestCursor: "a/b?c=d&e", Skip: MaxSkip, Status: restclient.StatusRefunded},
		{RestCursor: "ünïcødé", Status: restclient.StatusPending},
	} {
		f.Add(p.Encode())
	}
	f.Add("")
	f.Add("***")
	f.Add("AQAB")
	f.Add(strings.Repeat("A", 3000))
	f.Add(encodeRaw([]byte{cursorVersion, statusesCount + 1, 0}))
	f.Add(encodeRaw([]byte{cursorVersion, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}))
	f.Add(encodeRaw([]byte{cursorVersion, 0, 0x80, 0x00})) // non-minimal varint 0
	f.Fuzz(func(t *testing.T, s string) {
		p, err := Decode(s)
		if err != nil {
			if err != ErrBadCursor {
				t.Fatalf("Decode(%q) error %v, want ErrBadCursor", s, err)
			}
			return
		}
		if p.Skip < 0 || p.Skip > MaxSkip {
			t.Fatalf("Decode(%q) skip %d out of 0..%d", s, p.Skip, MaxSkip)
		}
		if statusIndex(p.Status) == 0 && p.Status != "" {
			t.Fatalf("Decode(%q) unknown status %q", s, p.Status)
		}
		if len(p.RestCursor) > maxRestCursor {
			t.Fatalf("Decode(%q) REST cursor of %d bytes, over %d", s, len(p.RestCursor), maxRestCursor)
		}
		back, err := Decode(p.Encode())
		if err != nil || back != p {
			t.Fatalf("Decode(%q) = %+v; re-encoded it decodes to %+v, %v", s, p, back, err)
		}
	})
}

// FuzzEncodeRoundTrip: every position the gateway can hand out (a REST
// cursor of up to maxRestCursor bytes, Skip 0..MaxSkip, any status)
// decodes back to itself, and the text is URL-safe; any single-byte edit
// of the text is refused or yields a valid position, never a panic.
func FuzzEncodeRoundTrip(f *testing.F) {
	f.Add("cGF5X3Byb2RfMTIz", uint8(0), uint8(0), uint16(0))
	f.Add("a/b?c=d&e", uint8(MaxSkip), uint8(5), uint16(3))
	f.Add("", uint8(1), uint8(2), uint16(9))
	f.Add("\x00\xff", uint8(99), uint8(4), uint16(1))
	f.Fuzz(func(t *testing.T, rest string, skip, status uint8, edit uint16) {
		if len(rest) > maxRestCursor {
			rest = rest[:maxRestCursor]
		}
		p := Position{RestCursor: rest, Skip: int(skip) % (MaxSkip + 1), Status: cursorStatuses[int(status)%len(cursorStatuses)]}
		s := p.Encode()
		if strings.ContainsAny(s, "+/=") {
			t.Fatalf("%q is not URL-safe", s)
		}
		got, err := Decode(s)
		if err != nil || got != p {
			t.Fatalf("Decode(Encode(%+v)) = %+v, %v", p, got, err)
		}
		// Flip one bit of the binary form: the checksum must catch it
		// (a 32-bit check may, very rarely, not; then it must still be a
		// valid position, which FuzzDecode checks).
		raw, _ := base64.RawURLEncoding.DecodeString(s)
		i := int(edit) % (len(raw) * 8)
		raw[i/8] ^= 1 << (i % 8)
		if q, err := Decode(base64.RawURLEncoding.EncodeToString(raw)); err == nil && q == p {
			t.Fatalf("a flipped bit %d decoded to the same position %+v", i, p)
		}
	})
}
