package gqlhttp

import (
	"context"
	"net/http"
	"net/netip"
	"slices"
	"strings"

	"paygraph/internal/opscope"
	"paygraph/restclient"
)

// ClientAddress is the middleware that puts the caller's address in the
// request's context, where the REST client charges the calls of a pair
// not yet accepted to that address's budget.
func ClientAddress(trusted []netip.Prefix, accepted func(context.Context) bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if accepted(r.Context()) {
				next.ServeHTTP(w, r)
				return
			}
			addr := ClientAddr(r, trusted)
			next.ServeHTTP(w, opscope.Request(r, restclient.WithClientAddr(r.Context(), addr)))
		})
	}
}

// ClientAddr is the caller's address: the connection's peer, unless it is
// a trusted proxy; then the rightmost address of X-Forwarded-For that is
// not (the client writes the leftmost ones). The zero Addr when RemoteAddr
// is not an address.
func ClientAddr(r *http.Request, trusted []netip.Prefix) netip.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	addr := ap.Addr().Unmap()
	if !isTrusted(addr, trusted) {
		return addr
	}
	hops := r.Header.Values("X-Forwarded-For")
	for i := len(hops) - 1; i >= 0; i-- {
		items := strings.Split(hops[i], ",")
		for j := len(items) - 1; j >= 0; j-- {
			a, err := netip.ParseAddr(strings.TrimSpace(items[j]))
			if err != nil {
				return addr // unreadable: the last address known good
			}
			addr = a.Unmap()
			if !isTrusted(addr, trusted) {
				return addr
			}
		}
	}
	return addr
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	return slices.ContainsFunc(trusted, func(p netip.Prefix) bool { return p.Contains(a) })
}
