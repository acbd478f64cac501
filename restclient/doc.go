// Package restclient is the typed client of the Payment Records Read API:
// it builds requests (escaping every id into a single path segment),
// forwards the caller's credential pair taken from the context, decodes
// responses into exact types (money in paisa, never a float) and reports
// failures as typed errors. Every call passes its Limiter, which bounds
// the calls in flight per request of its caller (WithRequestLimit), per
// merchant and per process.
// It knows nothing about GraphQL.
package restclient
