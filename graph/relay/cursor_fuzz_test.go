package relay

import (
	"strings"
	"testing"

	"paygraph/restclient"
)

// FuzzDecode feeds arbitrary text to the cursor decoder. Invariants: it
// never panics; it either refuses with ErrBadCursor or returns a position
// within bounds (Skip 0..MaxSkip, a known status, a REST cursor no longer
// than the limit) whose encoding is exactly the text given: no modified
// cursor, not even one that would mean the same position, is accepted.
func FuzzDecode(f *testing.F) {
	s := testSigner(f)
	for _, p := range []Position{
		{},
		{Skip: 1},
		{RestCursor: "cGF5X3Byb2RfMTIz", Skip: 7, Status: restclient.StatusFailed},
		{RestCursor: "a/b?c=d&e", Skip: MaxSkip, Status: restclient.StatusRefunded},
		{RestCursor: "ünïcødé", Status: restclient.StatusPending},
	} {
		c := s.Encode(p)
		f.Add(c)
		f.Add(c + "\n")
		f.Add(c[:len(c)-1] + string(c[len(c)-1]^1))
	}
	f.Add("")
	f.Add("***")
	f.Add("AQAB")
	f.Add(strings.Repeat("A", 3000))
	f.Add(sign(s, []byte{cursorVersion, statusesCount + 1, 0}))
	f.Add(sign(s, []byte{cursorVersion, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}))
	f.Add(sign(s, []byte{cursorVersion, 0, 0x80, 0x00})) // non-minimal varint 0
	f.Fuzz(func(t *testing.T, c string) {
		p, err := s.Decode(c)
		if err != nil {
			if err != ErrBadCursor {
				t.Fatalf("Decode(%q) error %v, want ErrBadCursor", c, err)
			}
			return
		}
		if p.Skip < 0 || p.Skip > MaxSkip {
			t.Fatalf("Decode(%q) skip %d out of 0..%d", c, p.Skip, MaxSkip)
		}
		if statusIndex(p.Status) == 0 && p.Status != "" {
			t.Fatalf("Decode(%q) unknown status %q", c, p.Status)
		}
		if len(p.RestCursor) > maxRestCursor {
			t.Fatalf("Decode(%q) REST cursor of %d bytes, over %d", c, len(p.RestCursor), maxRestCursor)
		}
		if back := s.Encode(p); back != c {
			t.Fatalf("Decode(%q) = %+v, which encodes to %q: a modified cursor was accepted", c, p, back)
		}
	})
}

// FuzzEncodeRoundTrip: every position the gateway can hand out (a REST
// cursor of up to maxRestCursor bytes, Skip 0..MaxSkip, any status)
// decodes back to itself, and the text is URL-safe; any edit of the text
// (one character changed, deleted or inserted) is refused, and so is the
// cursor under another merchant's credentials.
func FuzzEncodeRoundTrip(f *testing.F) {
	f.Add("cGF5X3Byb2RfMTIz", uint8(0), uint8(0), uint16(0))
	f.Add("a/b?c=d&e", uint8(MaxSkip), uint8(5), uint16(3))
	f.Add("", uint8(1), uint8(2), uint16(9))
	f.Add("\x00\xff", uint8(99), uint8(4), uint16(1))
	s := testSigner(f)
	other := mustKeys(f, testKeyA).For("ak_test_other", "sk_test_secret")
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	f.Fuzz(func(t *testing.T, rest string, skip, status uint8, edit uint16) {
		if len(rest) > maxRestCursor {
			rest = rest[:maxRestCursor]
		}
		p := Position{RestCursor: rest, Skip: int(skip) % (MaxSkip + 1), Status: cursorStatuses[int(status)%len(cursorStatuses)]}
		c := s.Encode(p)
		if strings.ContainsAny(c, "+/=") {
			t.Fatalf("%q is not URL-safe", c)
		}
		got, err := s.Decode(c)
		if err != nil || got != p {
			t.Fatalf("Decode(Encode(%+v)) = %+v, %v", p, got, err)
		}
		if q, err := other.Decode(c); err != ErrBadCursor {
			t.Fatalf("another merchant decoded %q to %+v, %v", c, q, err)
		}
		i := int(edit) % len(c)
		repl := alphabet[int(edit/7)%len(alphabet)]
		if repl == c[i] {
			repl = alphabet[(int(edit/7)+1)%len(alphabet)]
		}
		for name, m := range map[string]string{
			"changed":  c[:i] + string(repl) + c[i+1:],
			"deleted":  c[:i] + c[i+1:],
			"inserted": c[:i] + string(repl) + c[i:],
		} {
			if q, err := s.Decode(m); err != ErrBadCursor {
				t.Fatalf("%s character %d: %q decoded to %+v, %v", name, i, m, q, err)
			}
		}
	})
}
