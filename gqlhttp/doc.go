// Package gqlhttp is the /graphql HTTP edge: everything between an HTTP
// request and the GraphQL server that graph builds. Each concern is one
// standard func(http.Handler) http.Handler middleware in a file of its own
// (go-chi's middleware folder is the model), which the gateway's router
// composes on the /graphql route:
//
//   - Credentials (at the top of the router) reads the caller's
//     x-api-key and x-api-secret once; SingleCredentials refuses them when
//     sent more than once; CallerSecrets lists what they held, for the
//     redacting logger and metrics;
//   - NoStore keeps answers out of shared caches;
//   - RequestSize refuses bodies over the limit before anything reads them;
//   - Methods refuses what no transport takes (wrong method or content
//     type, bad GET parameters, protocol upgrades but a websocket's);
//   - Deadline gives the request its deadline and its bound on REST calls
//     in flight (a stream gets no deadline: its subscriptions are bounded);
//   - OnRefused tells a hook (the metrics) of every refusal above.
//
// AddTransports gives a gqlgen server the transports the edge accepts: its
// own JSON POST and GET transports (post.go and get.go say why they are
// ours), which answer through one GraphQL-over-HTTP exchange (exchange.go:
// Accept negotiation, request errors without data, @defer results streamed
// as multipart/mixed to the clients that accept it: incremental.go),
// gqlgen's OPTIONS, and with a Live config the subscription streams:
// gqlgen's SSE (graphql-sse: for the requests that ask for the event
// stream alone) and WebSocket (graphql-transport-ws) transports, whose
// connection_init credentials pass the same readers as headers (live.go). Every refusal is
// a GraphQL-shaped body with the contract's extensions.code (errors.go), in
// the negotiated media type.
//
// It sits above graph (whose error codes it uses) and below the gateway,
// which composes it; graph never imports it.
package gqlhttp
