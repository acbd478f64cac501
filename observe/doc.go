// Package observe makes the gateway observable without letting it leak:
// Prometheus metrics on a registry of their own, OpenTelemetry tracing
// (off unless the OTEL_* variables ask for it) and structured logs behind
// a redaction layer, with one access line per request. No credential,
// resource id or query text reaches a metric label or span name, and no
// x-api-secret (nor x-api-key beyond its "ak_test_"/"ak_prod_" prefix) a
// log line; the request's own credential pair (Options.Secrets) is kept
// out whatever its shape. Labels are bounded: REST endpoints by route
// pattern, operation names only plain ones, at most MaxOperationNames and
// only from requests the REST API served. It is a leaf: what it knows of
// the parts it observes reaches it through Options, and the layers share
// a RequestStats through the request context (AccessLog creates and
// prints it).
package observe
