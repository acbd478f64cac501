// Package sessiontoken lets a browser or a mobile app call the gateway without
// the merchant's x-api-secret: the merchant's server trades its credential
// pair (NewHandler, POST /auth/token) for a short-lived token scoped to what
// the client needs and to a customer-data level, sent as "Authorization:
// Bearer <token>". A token is PASETO v4.local (authenticated encryption with
// nothing to negotiate, no JOSE "alg" pitfalls, through the Go implementation
// the PASETO project lists), sealed with a key of TOKEN_KEYS (the first mints,
// all verify), so the gateway keeps no state; its readable footer holds only
// the key's PASERK id. Logs redact tokens like secrets (RedactTokens). Its
// hooks (Options.Verify, Options.LookupCheckoutSession) are written over the
// REST client elsewhere.
package sessiontoken
