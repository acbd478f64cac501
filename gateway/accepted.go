// The accepted merchants shared by the fleet (issue 22): restclient's
// AcceptedStore in the Redis of REDIS_URL, so that a merchant accepted by
// one replica skips every replica's budgets for unaccepted credential
// pairs, and a restarted replica serves its merchants at once.

package gateway

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// acceptedTTL is how long Redis remembers an accepted merchant after its
// first 2xx on some replica (each replica writes once, when it first
// accepts the pair): a week, after which a quiet merchant's next call
// costs one call of the shared budget again. Keys hold no credential:
// the merchant is restclient's identity of the pair, an HMAC under
// MERCHANT_ID_KEY.
const acceptedTTL = 7 * 24 * time.Hour

// acceptedKeyPrefix is the shape of the keys: prefix + merchant.
const acceptedKeyPrefix = "paygraph:merchant:accepted:"

// redisAccepted is restclient.AcceptedStore over a Redis client (the APQ
// store's: one pool a replica). Each call carries restclient's deadline.
// onErr counts each operation that failed (the replica then remembers
// accepted merchants in its own memory).
type redisAccepted struct {
	rdb   *redis.Client
	onErr func()
}

func (s redisAccepted) Accepted(ctx context.Context, merchant string) (bool, error) {
	n, err := s.rdb.Exists(ctx, acceptedKeyPrefix+merchant).Result()
	return n == 1, s.counted(ctx, err)
}

func (s redisAccepted) Accept(ctx context.Context, merchant string) error {
	return s.counted(ctx, s.rdb.Set(ctx, acceptedKeyPrefix+merchant, "1", acceptedTTL).Err())
}

func (s redisAccepted) Forget(ctx context.Context, merchant string) error {
	return s.counted(ctx, s.rdb.Del(ctx, acceptedKeyPrefix+merchant).Err())
}

// counted counts err, unless the caller canceled the operation (which
// says nothing of Redis; a deadline passed does).
func (s redisAccepted) counted(ctx context.Context, err error) error {
	if err != nil && !errors.Is(ctx.Err(), context.Canceled) && s.onErr != nil {
		s.onErr()
	}
	return err
}
