package relay

import (
	"bytes"
	"testing"
)

// TestDerive: a derived key is the same for every replica given the same
// CURSOR_KEYS, follows the signing (first) key, and differs by label and
// from the key itself.
func TestDerive(t *testing.T) {
	t.Parallel()
	const a = "0000000000000000000000000000000000000000000000000000000000000001"
	const b = "0000000000000000000000000000000000000000000000000000000000000002"
	parse := func(s string) *Keys {
		k, err := ParseKeys(s)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	for _, tc := range []struct {
		name      string
		x, y      *Keys
		lx, ly    string
		wantEqual bool
	}{
		{"same keys, same label", parse(a), parse(a), "l", "l", true},
		{"same signing key, an old key added", parse(a), parse(a + "," + b), "l", "l", true},
		{"another signing key", parse(a), parse(b + "," + a), "l", "l", false},
		{"another label", parse(a), parse(a), "l", "m", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dx, dy := tc.x.Derive(tc.lx), tc.y.Derive(tc.ly)
			if len(dx) != 32 {
				t.Fatalf("derived key of %d bytes, want 32", len(dx))
			}
			if bytes.Equal(dx, dy) != tc.wantEqual {
				t.Errorf("equal = %v, want %v", bytes.Equal(dx, dy), tc.wantEqual)
			}
			if bytes.Equal(dx, tc.x.keys[0]) {
				t.Error("the derived key is the signing key itself")
			}
		})
	}
}
