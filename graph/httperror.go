package graph

import "net/http"

// WriteHTTPError answers with the contract's GraphQL-shaped error body
// ({"errors":[{"message", "extensions":{"code"}}]}): the one writer of
// the answers the edge gives without running an operation, handed by the
// composition root to the parts that answer on their own (the token
// endpoint, the bearer-token check).
func WriteHTTPError(w http.ResponseWriter, status int, code, msg string) {
	writeHTTPError(w, status, code, msg)
}
