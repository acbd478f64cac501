package apqstore

import "github.com/redis/go-redis/v9"

// Client is the store's Redis client, for other users of the same Redis
// (one pool a replica). The store closes it.
func (r *Redis) Client() *redis.Client { return r.client }
