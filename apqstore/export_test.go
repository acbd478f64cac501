package apqstore

import (
	"testing"
	"time"
)

// StartRedisForTest is startRedis, for the package's external tests.
func StartRedisForTest(t *testing.T) (url, addr string) {
	s := startRedis(t)
	return s.URL, s.Addr
}

// WithPrefix namespaces the keys (default DefaultPrefix).
func WithPrefix(p string) Option { return func(s *settings) { s.prefix = p } }

// WithTimeouts sets the dial timeout and the read and write timeout of
// Redis operations (default DefaultDialTimeout, DefaultOpTimeout).
func WithTimeouts(dial, op time.Duration) Option {
	return func(s *settings) { s.dialTimeout, s.ioTimeout = dial, op }
}

// WithBackoff sets how long Redis is skipped after a failure (default 1s;
// negative: never skipped).
func WithBackoff(d time.Duration) Option { return func(s *settings) { s.backoff = d } }

// Stats counts what the store did since it was created.
type Stats struct {
	LocalHits, RedisHits, Misses uint64
	Stores                       uint64 // queries written to Redis
	Errors                       uint64 // Redis operations that failed or timed out
	Skipped                      uint64 // operations not sent to Redis during a backoff
	Mismatched                   uint64 // queries read from Redis whose text is not their key's: misses
}

// Stats returns the counters.
func (r *Redis) Stats() Stats {
	return Stats{
		LocalHits: r.stats.localHits.Load(), RedisHits: r.stats.redisHits.Load(), Misses: r.stats.misses.Load(),
		Stores: r.stats.stores.Load(), Errors: r.stats.errors.Load(), Skipped: r.stats.skipped.Load(),
		Mismatched: r.stats.mismatched.Load(),
	}
}
