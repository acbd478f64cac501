package restclient

import (
	"context"
	"encoding/hex"
)

// MerchantOf names the merchant of the credential pair ctx carries
// (WithCredentials): the hex SHA-256 the Limiter keys merchants by, never
// the secret, the same on every replica. The per-merchant rate limits key
// their budgets (in memory and in Redis) by it. ok is false when ctx
// carries no usable pair.
func MerchantOf(ctx context.Context) (string, bool) {
	v, ok := credentialsFrom(ctx)
	if !ok {
		return "", false
	}
	return hex.EncodeToString(v.merchant[:]), true
}
