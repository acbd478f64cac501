// Package sandbox is an in-process, standard-library-only implementation of
// the Payment Records Read API (shared/rest-api.md) serving deterministic
// demo data, for `go run .` without a REST backend, tests and benchmarks.
// It imports no other package of this project, so that the REST client's
// tests against it check the client against an independent reading of the
// REST documentation. The data is generated once from Options.Seed (the
// same seed renders byte-identical responses); the only change after that
// is a payment's status, through the admin endpoint (admin.go). A Server
// records every request (Calls), can add latency and inject faults
// (SetFaults) for resilience tests; cmd/sandbox is a standalone server.
package sandbox
