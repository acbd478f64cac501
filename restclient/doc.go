// Package restclient is the typed client of the Payment Records Read API:
// it forwards the caller's credential pair from the context, escapes every
// id into one path segment, decodes answers into exact types (money in
// paisa, never a float), bounds the calls in flight per request, merchant
// and process, and reports failures as typed errors that never hold a
// credential. It knows nothing about GraphQL.
package restclient
