// Package sandbox is an in-process, standard-library-only implementation of
// the Payment Records Read API (shared/rest-api.md) serving deterministic
// demo data, for `go run .` without a REST backend, tests and benchmarks.
// It imports no other package of this project, so it is an independent
// reading of the REST documentation. The data is generated from Options.Seed
// (same seed, byte-identical responses); only a payment's status changes,
// through the admin endpoint. A Server records every request (Calls) and can
// add latency and faults (SetFaults); cmd/sandbox is a standalone server.
package sandbox
