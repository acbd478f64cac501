package apqstore

import "github.com/redis/go-redis/v9"

// Client is the store's Redis client (short timeouts, ContextTimeoutEnabled,
// no retries), for other users of the same Redis, such as the shared rate
// limits, so that a replica keeps one pool. The store closes it.
func (r *Redis) Client() *redis.Client { return r.client }
