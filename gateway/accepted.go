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
