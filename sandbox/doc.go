// Package sandbox is an in-process, standard-library-only implementation of
// the Payment Records Read API described in shared/rest-api.md, serving
// deterministic generated demo data.
//
// It is used when no real REST backend is configured (go run .), by tests and
// by benchmarks. It deliberately imports no other package of this project, so
// that tests of the REST client against it check the client against an
// independent reading of the REST documentation.
//
// A Server is an http.Handler. Construct it with New; the data (businesses,
// payments, payment links, checkout sessions) is generated once from
// Options.Seed with math/rand/v2 and a fixed reference date, so the same seed
// always renders byte-identical responses. The only change to the data after
// construction is a payment's status, set through the admin endpoint or
// SetPaymentStatus/SetCheckoutSessionStatus (admin.go), so that tests and the
// demo can watch a payment move; a read sees a change wholly or not at all.
//
// Behaviour where rest-api.md is silent (status codes, error messages, list
// order, cursor format, limit handling) follows these rules:
//
//   - Every endpoint is GET only; other methods on a known route get 405
//     {"error":"Method not allowed"} with an Allow: GET header.
//   - Unknown routes get 404 {"error":"Not found"} (before any auth check).
//   - Missing x-api-key or x-api-secret: 401 {"error":"Missing API credentials"};
//     a pair that matches no business: 401 {"error":"Invalid API credentials"}.
//   - GET /api/v1/payments: limit defaults to 20, values above 100 are
//     clamped to 100, non-integers and values below 1 give 400
//     {"error":"Invalid limit"}. An unknown or garbled cursor gives 400
//     {"error":"Invalid cursor"}; an unknown status value gives 400
//     {"error":"Invalid status"}. Empty query values count as absent.
//     Status values are matched exactly (upper case).
//   - The list is ordered by created_at descending, ties broken by id
//     descending. The cursor is keyset style: base64url (no padding) of the id
//     of the last item returned, so the page starting at a cursor does not
//     depend on the limit, and a cursor can be combined with any status filter.
//   - Path ids are taken from the escaped path, segment by segment, and then
//     unescaped; an id containing "/" or "?" is simply an unknown id.
//   - A checkout session can be looked up by its id or its reference.
//
// Request processing order: record the Call, ask the fault hook, sleep the
// configured latency (returning early, without answering, when the request
// context ends), then either inject the fault or handle normally (route ->
// method -> credentials -> parameters -> lookup). Faults therefore hit any
// route, even unauthenticated or unknown ones.
//
// Credentials are derived from a fixed internal seed, so the demo
// credentials printed by cmd/sandbox are the same for every Options.Seed.
//
// The admin endpoint is the sandbox's own, not part of the REST API, and
// needs the business's credential pair like the REST routes:
//
//	POST /sandbox/payments/{id}/status           {"status":"SUCCEEDED"}
//	POST /sandbox/checkout/sessions/{id}/status  {"status":"REFUNDED"}  (id or reference; changes its payment)
//
// It answers 200 with the changed resource in its retrieve form; 400
// {"error":"Invalid body"} or {"error":"Invalid status"}; 404 for an unknown
// payment or session; 401 and 405 (Allow: POST) as the REST routes do. Admin
// requests are not recorded, delayed or faulted.
//
// Besides serving HTTP, a Server records every request (see Call, Calls,
// CallCount, ResetCalls), can add latency (SetLatency) and can inject faults
// (SetFaults, RandomFaults) for resilience tests.
//
// The cmd/sandbox directory holds a standalone server binary.
package sandbox
