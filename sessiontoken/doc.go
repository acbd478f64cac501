// Package sessiontoken lets a browser or a mobile app call the gateway
// without holding the merchant's x-api-secret: the merchant's server
// trades its credential pair for a short-lived token scoped to what the
// client needs (every read, one checkout session and its payment, or one
// payment), and the client sends "Authorization: Bearer <token>".
//
// The gateway keeps no state for it: a token carries the credential pair
// and its scope encrypted and authenticated with a gateway key
// (TOKEN_KEYS), so any replica holding the key serves it. The pair exists
// only inside the encrypted payload; the readable footer holds the key's
// id and nothing else, and the implicit assertion is a constant. A token
// is a bearer credential until it expires: the logger redacts it like a
// secret (LooksLikeToken, RedactTokens).
//
// It is a leaf: it imports nothing of the gateway. Its Credentials has the
// fields of restclient.Credentials, and its hooks (Options.Verify,
// Options.LookupCheckoutSession) are functions the composition root
// writes over the REST client.
//
// # Why PASETO v4.local, and why aidanwoods.dev/go-paseto
//
// PASETO v4.local is authenticated encryption (XChaCha20 with a keyed
// BLAKE2b tag over header, nonce, ciphertext, footer and implicit
// assertion) with nothing to negotiate: the version fixes every algorithm,
// so none of JOSE's "alg" pitfalls (alg "none", algorithm confusion,
// weak key-wrapping modes) exist. aidanwoods.dev/go-paseto is the Go
// implementation listed by the PASETO project, covers v4 with implicit
// assertions, checks itself against the official test vectors, decodes
// base64url strictly (one spelling per token), and brings only
// golang.org/x/crypto and a tiny result type with it. Writing the
// construction ourselves is what the project's rules forbid; JWE libraries
// would do it with a larger API whose choices we would have to pin.
//
// # Keys and rotation
//
// TOKEN_KEYS is a comma-separated list of 32-byte keys (hex or base64).
// The first mints; all verify. Every token's footer is {"kid": "k4.lid.…"},
// the key's PASERK id (a one-way BLAKE2b hash the PASETO specification
// recommends for this), rather than an implicit trial of each key: one
// decryption per token whatever the list's length, and a token of a key we
// do not hold is told apart (ErrForeign) from a changed one (ErrTampered).
// Rotation: put the new key first on every replica, wait TOKEN_MAX_TTL,
// remove the old one.
//
// # The token endpoint
//
// NewHandler serves POST with the pair in x-api-key and x-api-secret and
// the body {"ttlSeconds": 900, "scope": {"kind": "checkoutSession", "id":
// "REF123"}, "customerData": "masked"} (ttlSeconds optional, default 15
// minutes, at most TOKEN_MAX_TTL, refused above it; scope required: "all"
// takes no id, "checkoutSession" an id or reference, "payment" a payment
// id; customerData optional: "full", "masked" or "none", default
// DefaultCustomerData, refused above Options.MaxCustomerData). It answers
// {"token", "expiresAt", "scope", "customerData"}. See NewHandler for the
// errors.
//
// # Customer data
//
// A token's Scope carries a customer-data level (customerdata.go): how
// much of the customers' personal data it reads. The level is sealed in
// the token with the scope; the GraphQL layer masks what it fetches to it
// (graph/customerdata) and lowers it to the deployment's
// CUSTOMER_DATA_MAX (Scope.AtMost).
//
// # Wiring
//
// The composition root (gateway/):
//   - builds the Keyring: ParseKeyring(TOKEN_KEYS), or NewRandomKeyring()
//     in sandbox mode; with neither, Options.Keyring stays nil and the
//     endpoint says TOKEN_KEYS is not set;
//   - mounts NewHandler(Options{...}) at POST /auth/token, outside the
//     /graphql body and query limits, handing in the edge's credential
//     header names and error writer (Options.KeyHeader, SecretHeader,
//     WriteError: this leaf keeps no copy), with Verify doing a one-item
//     payments list through the REST client with restclient.Credentials(c)
//     and mapping restclient.KindUnauthorized/KindForbidden to
//     ErrBadCredentials, KindRateLimited to ErrRateLimited; and, so that
//     out-of-scope fields never cost a REST call, LookupCheckoutSession
//     reading the session (KindNotFound: ErrNoSuchSession);
//   - plugs RedactTokens into observe's string redaction (observe.Options'
//     Redact, beside restclient's shapes: gateway/logging.go), and lets
//     Authorization stay a secret-named attribute;
//   - adds "Authorization" to the CORS allowed headers and sets TOKEN_MAX_TTL
//     (default DefaultMaxTTL) in the settings table, and the default
//     lifetime to the lower of DefaultTTL and it.
//
// The /graphql edge (gqlhttp.Bearer, beside the credentials middleware):
// when the request has "Authorization: Bearer <token>" (and neither x-api
// header: both ways at once, or Authorization twice, is UNAUTHENTICATED),
// Keyring.Verify(token); an error answers 401 UNAUTHENTICATED with
// err.Error() as the message (it says expired, modified, foreign or
// malformed, never the token); otherwise it puts
// restclient.WithCredentials(ctx, restclient.Credentials(claims.Credentials))
// in the context as for the headers, and the Claims' Scope beside it
// (graph.WithScope). The pair keys the per-merchant limits as the headers'
// pair does. Requests with the two headers get no Scope: everything is
// allowed, as today.
//
// The resolvers (graph/), before any REST call, with the Scope from the
// context (none: allow): Query.payments asks AllowsList; payment and
// nodes/node ids of payments AllowsPayment(id); paymentLink and link ids
// AllowsPaymentLink(id); checkoutSession AllowsCheckoutSession(idOrRef).
// A refusal is FORBIDDEN ("this session token's scope does not include
// …") with no REST call. After any checkout session is fetched, call
// LearnCheckoutSession(ids) before resolving its fields, so that
// CheckoutSession.payment is allowed. When a token carries no session
// names (minted without LookupCheckoutSession) and a check fails,
// SessionToLearn gives the scope's own session: read it through the
// loader, learn it, and ask again.
package sessiontoken
