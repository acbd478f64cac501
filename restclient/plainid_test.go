package restclient

import (
	"net/url"
	"testing"
	"unicode/utf8"
)

// TestUnreservedBytesUnescaped: every byte checkID calls unreserved is one
// url.PathEscape leaves as it is, so a plain id skips it safely; and
// checkID's answers are those of the checks it stands for.
func TestUnreservedBytesUnescaped(t *testing.T) {
	t.Parallel()
	for b := range 256 {
		if s := string([]byte{byte(b)}); idUnreserved[b] == 1 && url.PathEscape(s) != s {
			t.Errorf("byte %#x is called unreserved, but url.PathEscape makes it %q", b, url.PathEscape(s))
		}
	}
	for _, tc := range []struct {
		name, id string
		why      string
		plain    bool
	}{
		{"a payment id", "pay_prod_0123456789abcdef0123456789abcdef", "", true},
		{"unreserved punctuation", "a-b.c_d~e", "", true},
		{"a slash", "a/b", "", false},
		{"a space", "a b", "", false},
		{"a percent", "100%", "", false},
		{"sub-delims PathEscape keeps", "a:b@c", "", false},
		{"UTF-8", "pay_ü", "", false},
		{"invalid UTF-8", "pay_\xff", "id is not valid UTF-8", false},
		{"a control character", "pay\n", "id contains a control character", false},
		{"DEL", "pay\x7f", "id contains a control character", false},
		{"empty", "", "id is empty", false},
		{"dot dot", "..", "id must not be . or ..", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			why, plain := checkID(tc.id)
			if why != tc.why || plain != tc.plain {
				t.Errorf("checkID(%q) = %q, %v; want %q, %v", tc.id, why, plain, tc.why, tc.plain)
			}
			if plain && (url.PathEscape(tc.id) != tc.id || !utf8.ValidString(tc.id)) {
				t.Errorf("%q is called plain, but PathEscape makes it %q", tc.id, url.PathEscape(tc.id))
			}
		})
	}
}
