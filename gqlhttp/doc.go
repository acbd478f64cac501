// Package gqlhttp is the /graphql HTTP edge: everything between an HTTP
// request and the GraphQL server that graph builds, as standard
// func(http.Handler) http.Handler middlewares the gateway composes (the
// credential readers, NoStore, RequestSize, Methods, Deadline, the
// admission step), and the transports AddTransports gives the server: our
// JSON POST and GET, answered through one GraphQL-over-HTTP exchange, and
// gqlgen's SSE and WebSocket streams, whose credentials pass the same
// readers as headers. Every refusal is a GraphQL-shaped body with the
// contract's extensions.code. It sits above graph and below the gateway.
package gqlhttp
