package gqlhttp

import (
	"net/http/httptest"
	"net/netip"
	"testing"
)

func TestClientAddr(t *testing.T) {
	t.Parallel()
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	for _, tc := range []struct {
		name    string
		remote  string
		xff     []string
		trusted []netip.Prefix
		want    string
	}{
		{"peer", "192.0.2.1:5000", nil, nil, "192.0.2.1"},
		{"forwarded header ignored without trusted proxies", "192.0.2.1:5000", []string{"203.0.113.9"}, nil, "192.0.2.1"},
		{"forwarded header ignored from an untrusted peer", "192.0.2.1:5000", []string{"203.0.113.9"}, proxies, "192.0.2.1"},
		{"trusted proxy: the client it names", "10.1.2.3:5000", []string{"203.0.113.9"}, proxies, "203.0.113.9"},
		{"rightmost untrusted of a list", "10.1.2.3:5000", []string{"198.51.100.1, 203.0.113.9, 10.9.9.9"}, proxies, "203.0.113.9"},
		{"across header lines", "10.1.2.3:5000", []string{"198.51.100.1", "203.0.113.9"}, proxies, "203.0.113.9"},
		{"unreadable entry: the last good one", "10.1.2.3:5000", []string{"203.0.113.9, junk"}, proxies, "10.1.2.3"},
		{"only proxies", "10.1.2.3:5000", []string{"10.2.2.2"}, proxies, "10.2.2.2"},
		{"IPv6 peer", "[2001:db8::1]:443", nil, nil, "2001:db8::1"},
		{"IPv4-mapped peer", "[::ffff:192.0.2.1]:443", nil, nil, "192.0.2.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/graphql", nil)
			r.RemoteAddr = tc.remote
			for _, v := range tc.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			if got := ClientAddr(r, tc.trusted); got.String() != tc.want {
				t.Errorf("ClientAddr = %s, want %s", got, tc.want)
			}
		})
	}
}
