// Package observe makes the gateway observable without letting it leak:
// Prometheus metrics on a registry of their own, OpenTelemetry tracing
// (off unless the standard OTEL_* variables ask for it), and structured
// logs (log/slog) behind a redaction layer, with one access line per
// request (at debug for the machines' polls named in Options.DebugPaths:
// probes and scrapes, left out at the default level, info).
//
// Its rule is the gateway's: no credential, resource id or query text in
// any metric label or span name, and no x-api-secret (nor x-api-key beyond
// its "ak_test_"/"ak_prod_" prefix) in any log line. Labels are bounded:
// REST endpoints are reported by route pattern ("/api/v1/payments/{id}"),
// GraphQL operation names are taken only when they are plain names, at
// most a hundred distinct ones, and only from requests the REST API served
// (so callers without valid credentials cannot use the set up); others are
// "other" (MaxOperationNames). The request's own credential pair, handed
// in as a function of the request context (Options.Secrets), is kept out
// of log lines, labels, span names and request ids whatever its shape.
//
// It is a leaf: it imports nothing of the gateway's. What it must know of
// the parts it observes reaches it as values and functions in Options,
// handed in by the composition root from their owners: the REST route
// namer and the breaker state (restclient), the loaders' names (graph),
// and the shapes of credentials (restclient's keys and secrets,
// sessiontoken's tokens).
//
// The layers share a RequestStats through the request context: AccessLog
// creates it, the GraphQL extension records the operation name and
// outcome, the REST transport counts the calls (and those answered with
// 2xx), and AccessLog prints them.
package observe
