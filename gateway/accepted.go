package gateway

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// acceptedTTL is how long Redis remembers an accepted merchant; after it a
// quiet merchant's next call costs one call of the shared budget again.
// Keys hold no credential: the merchant is an HMAC of the pair.
const acceptedTTL = 7 * 24 * time.Hour

// acceptedKeyPrefix is the shape of the keys: prefix + merchant.
const acceptedKeyPrefix = "paygraph:merchant:accepted:"

// redisAccepted is restclient.AcceptedStore in the Redis of REDIS_URL, so
// that a merchant accepted by one replica is accepted by all. onErr counts
// each operation that failed (the replica then remembers in its memory).
type redisAccepted struct {
	rdb   *redis.Client
	onErr func()
}

func (s redisAccepted) Accepted(ctx context.Context, merchant string) (bool, error) {
	n, err := s.rdb.Exists(ctx, acceptedKeyPrefix+merchant).Result()
	return n == 1, redisFailed(ctx, err, s.onErr)
}

func (s redisAccepted) Accept(ctx context.Context, merchant string) error {
	return redisFailed(ctx, s.rdb.Set(ctx, acceptedKeyPrefix+merchant, "1", acceptedTTL).Err(), s.onErr)
}

func (s redisAccepted) Forget(ctx context.Context, merchant string) error {
	return redisFailed(ctx, s.rdb.Del(ctx, acceptedKeyPrefix+merchant).Err(), s.onErr)
}

// redisFailed returns err, calling onErr (if any) for it unless the
// caller canceled the operation, which says nothing of Redis.
func redisFailed(ctx context.Context, err error, onErr func()) error {
	if err != nil && onErr != nil && !errors.Is(ctx.Err(), context.Canceled) {
		onErr()
	}
	return err
}
