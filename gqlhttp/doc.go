// Package gqlhttp is the /graphql HTTP edge between a request and the GraphQL
// server graph builds: the middlewares the gateway composes (credential
// readers, NoStore, RequestSize, Methods, Deadline, admission) and the
// transports AddTransports adds (our JSON POST and GET, and gqlgen's SSE and
// WebSocket streams). Every refusal is a GraphQL-shaped body with the
// contract's extensions.code.
package gqlhttp
