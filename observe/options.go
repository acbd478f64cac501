package observe

import (
	"context"
	"net/http"
	"net/netip"
	"net/url"
)

// Options is what the composition root tells observe of the parts it observes
// (and does not import). The zero Options is usable; each field says what its
// zero means.
type Options struct {
	// RouteOf names a REST call by its route pattern, never an id; "" for
	// none. Nil: every call is "other".
	RouteOf func(*url.URL) string
	// LoaderNames are the loaders whose batch sizes have a label of their own; any other is "other".
	LoaderNames []string
	// BreakerState reads the REST circuit breaker's state (0 closed, 1
	// half-open, 2 open). Nil: no gauge.
	BreakerState func() float64
	// Connections reads the client connections open and their cap by kind
	// ("live", "http"). Nil: none.
	Connections map[string]func() (open, limit int)
	// Redact rewrites every credential-shaped run of a text; logs, span errors and operation names
	// go through it (a name it changes is "other"). Nil: only Secrets and credential-named attributes go.
	Redact func(string) string
	// RedactKey writes the value of an attribute named like an API key (its prefix, say). Nil: Redacted.
	RedactKey func(string) string
	// Secrets returns the request's own credentials, whatever their shape: no log line, request id,
	// operation label or span name holds one or a piece of one. observe only reads the slice. Nil: none.
	Secrets func(context.Context) []string
	// MerchantTag is the access lines' opaque tag of ctx's merchant, no part
	// of the pair. Nil: none.
	MerchantTag func(context.Context) string
	// ClientAddr is the caller's address as the per-address budgets see it, for access lines. Nil: none logged.
	ClientAddr func(*http.Request) netip.Addr
	// DebugPaths are the paths (probes, scrapes) whose access lines are debug rather than info.
	DebugPaths []string
}

func (o Options) redact(s string) string {
	if o.Redact == nil {
		return s
	}
	return o.Redact(s)
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

// LogName is how logs, metrics and spans name an operation: "anonymous" without a name, "other"
// when it is not a plain name of at most 64 characters or is shaped like a credential.
func (o Options) LogName(name string) string {
	switch {
	case name == "":
		return OperationAnonymous
	case !plainName(name), o.redact(name) != name:
		return OperationOther
	}
	return name
}
