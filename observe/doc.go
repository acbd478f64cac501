// Package observe makes the gateway observable without letting it leak:
// Prometheus metrics on a registry of their own, OpenTelemetry tracing
// (off unless the standard OTEL_* variables ask for it), and structured
// logs (log/slog) behind a redaction layer, with one access line per
// request.
//
// Its rule is the gateway's: no credential, resource id or query text in
// any metric label or span name, and no x-api-secret (nor x-api-key beyond
// its "ak_test_"/"ak_prod_" prefix) in any log line. Labels are bounded:
// REST endpoints are reported by route pattern ("/api/v1/payments/{id}"),
// GraphQL operation names are taken only when they are plain names, and
// only the first hundred distinct ones; later ones are "other".
//
// The layers share a RequestStats through the request context: AccessLog
// creates it, the GraphQL extension records the operation name and
// outcome, the REST transport counts the calls, and AccessLog prints them.
package observe
