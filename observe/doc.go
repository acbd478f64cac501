// Package observe makes the gateway observable without letting it leak:
// Prometheus metrics on a registry of their own, OpenTelemetry tracing (off
// unless the OTEL_* variables ask for it) and structured logs behind a
// redaction layer, with one access line per request. No credential, resource
// id or query text reaches a metric label, span name or log line (an x-api-key
// keeps its prefix), and labels are bounded. It is a leaf: what it knows of
// the parts it observes reaches it through Options, and the layers share a
// RequestStats through the request context.
package observe
