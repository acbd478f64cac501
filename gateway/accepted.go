package gateway

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// How long Redis remembers an accepted merchant (its next call after it
	// costs the shared budget).
	acceptedTTL = 7 * 24 * time.Hour
	// acceptedKeyPrefix + merchant (an HMAC of the pair, no credential) is a key.
	acceptedKeyPrefix = "paygraph:merchant:accepted:"
)

// redisAccepted is restclient.AcceptedStore in REDIS_URL, shared by the
// replicas; onErr counts failures.
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

// redisFailed returns err, calling onErr (if any) unless the caller canceled,
// which says nothing of Redis.
func redisFailed(ctx context.Context, err error, onErr func()) error {
	if err != nil && onErr != nil && !errors.Is(ctx.Err(), context.Canceled) {
		onErr()
	}
	return err
}
