// Package sessiontoken lets a browser or a mobile app call the gateway
// without holding the merchant's x-api-secret: the merchant's server trades
// its credential pair (NewHandler, POST /auth/token) for a short-lived token
// scoped to what the client needs (every read, one checkout session and its
// payment, or one payment) and to a customer-data level, sent as
// "Authorization: Bearer <token>". A token is PASETO v4.local: the pair and
// scope encrypted and authenticated with a key of TOKEN_KEYS (the first
// mints, all verify), so any replica holding the key serves it and the
// gateway keeps no state; the readable footer holds only the key's PASERK
// id. A token is a bearer credential until it expires, so logs redact it
// like a secret (RedactTokens). It is a leaf: its hooks (Options.Verify,
// Options.LookupCheckoutSession) are written by the composition root over
// the REST client.
package sessiontoken

// Why PASETO v4.local through aidanwoods.dev/go-paseto: authenticated
// encryption with nothing to negotiate (none of JOSE's "alg" pitfalls), in
// the Go implementation the PASETO project lists, checked against the
// official test vectors; the project never hand-rolls the construction.
