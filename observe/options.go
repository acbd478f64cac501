package observe

import (
	"context"
	"net/http"
	"net/netip"
	"net/url"
)

// Options is what observe is told about the parts it observes, by the
// composition root (gateway/), which owns them: observe imports none of
// them. The zero Options is usable; each field says what its zero means.
type Options struct {
	// RouteOf names an outgoing REST call by its route pattern
	// ("/api/v1/payments/{id}"), never by an id: metric labels and span
	// names are bounded by it. It returns "" for a URL that is none of
	// the routes ("other"). If nil, every REST call is "other".
	RouteOf func(*url.URL) string
	// LoaderNames are the loaders whose batch sizes are recorded under
	// their own name (ObserveBatch); any other name is "other". If empty,
	// every batch is "other".
	LoaderNames []string
	// BreakerState reads the REST API circuit breaker's state (0 closed,
	// 1 half-open, 2 open) for paygraph_circuit_breaker_state when
	// scraped. Nil: no such gauge.
	BreakerState func() float64
	// Connections reads, by kind ("live": WebSocket and SSE; "http": the
	// listener's), the client connections open and their cap, for
	// paygraph_connections and paygraph_connections_limit when scraped.
	// Nil: no such gauges.
	Connections map[string]func() (open, limit int)
	// Redact rewrites every credential-shaped run of a text (anyone's API
	// key, secret or session token), as the owners of those shapes write
	// them; logs, span errors and operation names go through it, and an
	// operation name it changes is "other". If nil, no shape is known:
	// only Secrets and attributes named like a credential are redacted.
	Redact func(string) string
	// RedactKey is how the value of a log attribute named like an API key
	// (x-api-key) is written, for instance its prefix. If nil, it is
	// Redacted.
	RedactKey func(string) string
	// Secrets returns the request's own credentials (whatever their
	// shape): they are taken out of every log line logged in its context,
	// and no request id, operation label or span name holds one or a piece
	// of one. observe only reads the slice. Nil: none are known.
	Secrets func(context.Context) []string
	// MerchantTag names the merchant of a context's credentials (or
	// session token) in access lines: an opaque tag of its keyed
	// identity, never the key or any part of the pair; "" for none. Nil:
	// no merchant is logged.
	MerchantTag func(context.Context) string
	// ClientAddr is the caller's address as the per-address budgets see
	// it (the connection's peer, or the forwarded address a trusted proxy
	// gave), for access lines. Nil: none is logged.
	ClientAddr func(*http.Request) netip.Addr
	// DebugPaths are the URL paths (probes, scrapes) whose access lines
	// are debug rather than info. Empty: every line is info.
	DebugPaths []string
}

// redact, redactKey and secrets call the hooks, or do what a nil one means.
func (o Options) redact(s string) string {
	if o.Redact == nil {
		return s
	}
	return o.Redact(s)
}

func (o Options) redactKey(v string) string {
	if o.RedactKey == nil {
		return Redacted
	}
	return o.RedactKey(v)
}

func (o Options) secrets(ctx context.Context) []string {
	if o.Secrets == nil {
		return nil
	}
	return o.Secrets(ctx)
}

// routeOf is o.RouteOf(u), or EndpointOther.
func (o Options) routeOf(u *url.URL) string {
	if o.RouteOf != nil && u != nil {
		if r := o.RouteOf(u); r != "" {
			return r
		}
	}
	return EndpointOther
}

// LogName is how logs, metrics and spans name an operation: "anonymous"
// without a name, "other" when it is not a plain name of at most 64
// characters or when it is shaped like a credential (o.Redact changes
// it), anyone's.
func (o Options) LogName(name string) string {
	switch {
	case name == "":
		return OperationAnonymous
	case !plainName(name), o.redact(name) != name:
		return OperationOther
	}
	return name
}
