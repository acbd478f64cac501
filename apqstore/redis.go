// Package apqstore keeps Automatic Persisted Queries in Redis behind a
// bounded in-process LRU, so that a query registered through one replica
// can be sent by hash alone to any other. Redis is a cache, never a
// dependency: each operation has a short deadline, a failure is a miss
// and starts a backoff. What Redis holds is untrusted: a query read back
// is served only when its text's SHA-256 is its key.
package apqstore

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/redis/go-redis/v9"
)

// Defaults of the options.
const (
	DefaultTTL           = 24 * time.Hour
	DefaultPrefix        = "paygraph:apq:"
	DefaultLocalSize     = 1000
	DefaultMaxValueBytes = 32 << 10 // the longest query text by default (half of MAX_BODY_BYTES)
	DefaultDialTimeout   = 200 * time.Millisecond
	DefaultOpTimeout     = 100 * time.Millisecond // read and write
	DefaultBackoff       = time.Second
	maxKeyBytes          = 128 // an APQ key is a 64-character sha256 in hex
)

// hashKey reports whether key is the lower-case hex SHA-256 of query.
func hashKey(key, query string) bool {
	sum := sha256.Sum256([]byte(query))
	var hexSum [2 * sha256.Size]byte
	hex.Encode(hexSum[:], sum[:])
	return string(hexSum[:]) == key
}

// Redis is gqlgen's APQ cache in Redis, with an in-process LRU in front.
type Redis struct {
	settings
	client   *redis.Client
	local    *Local
	ttl      time.Duration
	deadline time.Duration // whole-operation deadline (dial + read/write)
	addr     string

	downUntil atomic.Int64 // unix nanoseconds: skip Redis until then
	down      atomic.Bool  // for logging the transitions only
	stats     struct{ localHits, redisHits, misses, errors, skipped, stores, mismatched atomic.Uint64 }
}

var _ graphql.Cache[string] = (*Redis)(nil)

// Option changes a default of NewRedis.
type Option func(*settings)

type settings struct {
	prefix                          string
	localSize, maxValue             int
	localBytes                      int64
	dialTimeout, ioTimeout, backoff time.Duration
	logger                          *slog.Logger
	mismatch, errCount              func() // count a query read back whose text is not its key's, a failed operation
}

// WithLocalSize and WithLocalBytes bound the in-process LRU's queries and
// their bytes (default DefaultLocalSize, DefaultLocalBytes).
func WithLocalSize(n int) Option    { return func(s *settings) { s.localSize = n } }
func WithLocalBytes(n int64) Option { return func(s *settings) { s.localBytes = n } }

// WithMaxValueBytes sets the longest query stored in Redis (default 32 KiB);
// longer ones are kept only in the local LRU.
func WithMaxValueBytes(n int) Option { return func(s *settings) { s.maxValue = n } }

// WithErrorCounter and WithMismatchCounter call count for each failed or
// timed-out Redis operation, and for each query read back whose text is not
// its key's (a miss).
func WithErrorCounter(count func()) Option    { return func(s *settings) { s.errCount = count } }
func WithMismatchCounter(count func()) Option { return func(s *settings) { s.mismatch = count } }

// WithLogger logs Redis becoming unavailable and available again.
func WithLogger(l *slog.Logger) Option { return func(s *settings) { s.logger = l } }

// NewRedis returns a store on the Redis at url; ttl is how long a
// registered query lives there (0: DefaultTTL), and timeouts in the URL
// override the short defaults. It fails only on a bad URL or option: an
// unreachable Redis gives a store that misses until it is back.
func NewRedis(ctx context.Context, url string, ttl time.Duration, opts ...Option) (*Redis, error) {
	s := settings{prefix: DefaultPrefix, localSize: DefaultLocalSize, localBytes: DefaultLocalBytes,
		maxValue: DefaultMaxValueBytes, dialTimeout: DefaultDialTimeout, ioTimeout: DefaultOpTimeout, backoff: DefaultBackoff}
	for _, o := range opts {
		o(&s)
	}
	if ttl < 0 {
		return nil, errors.New("apqstore: negative TTL")
	}
	if s.localSize <= 0 || s.localBytes <= 0 || s.maxValue <= 0 || s.dialTimeout <= 0 || s.ioTimeout <= 0 {
		return nil, errors.New("apqstore: sizes and timeouts must be positive")
	}
	ro, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("apqstore: REDIS_URL: %w", err)
	}
	ro.DialTimeout = cmp.Or(ro.DialTimeout, s.dialTimeout)
	ro.ReadTimeout = cmp.Or(ro.ReadTimeout, s.ioTimeout)
	ro.WriteTimeout = cmp.Or(ro.WriteTimeout, s.ioTimeout)
	ro.PoolTimeout = cmp.Or(ro.PoolTimeout, s.ioTimeout) // waiting for a free connection
	ro.MaxRetries = cmp.Or(ro.MaxRetries, -1)            // a miss is cheaper than a retry
	ro.ContextTimeoutEnabled = true
	ro.DisableIdentity = true // no CLIENT SETINFO round trip on each new connection
	s.logger = cmp.Or(s.logger, slog.New(slog.DiscardHandler))
	r := &Redis{settings: s, client: redis.NewClient(ro), local: NewLocal(s.localSize, s.localBytes), addr: ro.Addr,
		ttl: cmp.Or(ttl, DefaultTTL), deadline: ro.DialTimeout + max(ro.ReadTimeout, ro.WriteTimeout)}
	_ = r.Ping(ctx) // a failure is logged and starts the backoff
	return r, nil
}

// Ping checks that Redis answers, within the operation deadline.
func (r *Redis) Ping(ctx context.Context) error {
	octx, cancel := context.WithTimeout(ctx, r.deadline)
	defer cancel()
	err := r.client.Ping(octx).Err()
	r.observe(ctx, err)
	return err
}

// Get returns the query registered under key (its sha256) from the local
// LRU, else from Redis; a Redis failure or a text not key's is a miss.
func (r *Redis) Get(ctx context.Context, key string) (string, bool) {
	if v, ok := r.local.Get(ctx, key); ok {
		r.stats.localHits.Add(1)
		return v, true
	}
	if !r.sendable(key, 0) {
		r.stats.misses.Add(1)
		return "", false
	}
	octx, cancel := context.WithTimeout(ctx, r.deadline)
	defer cancel()
	v, err := r.client.Get(octx, r.prefix+key).Result()
	if errors.Is(err, redis.Nil) {
		r.observe(ctx, nil)
		r.stats.misses.Add(1)
		return "", false
	}
	r.observe(ctx, err)
	if err != nil || len(v) > r.maxValue {
		r.stats.misses.Add(1)
		return "", false
	}
	if !hashKey(key, v) {
		r.stats.mismatched.Add(1)
		r.stats.misses.Add(1)
		if r.mismatch != nil {
			r.mismatch()
		}
		return "", false
	}
	r.stats.redisHits.Add(1)
	r.local.Add(ctx, key, v)
	return v, true
}

// Add registers query under key, in the local LRU and in Redis; it never
// fails (this replica still serves a query Redis did not take).
func (r *Redis) Add(ctx context.Context, key, query string) {
	r.local.Add(ctx, key, query)
	if !r.sendable(key, len(query)) {
		return
	}
	octx, cancel := context.WithTimeout(ctx, r.deadline)
	defer cancel()
	err := r.client.Set(octx, r.prefix+key, query, r.ttl).Err()
	r.observe(ctx, err)
	if err == nil {
		r.stats.stores.Add(1)
	}
}

// Client is the store's Redis client, for other users of the same Redis; Close
// closes it.
func (r *Redis) Client() *redis.Client { return r.client }
func (r *Redis) Close() error          { return r.client.Close() }

// sendable reports whether an operation on key with a value of n bytes
// goes to Redis (not during a backoff, which counts it as skipped).
func (r *Redis) sendable(key string, n int) bool {
	if len(key) == 0 || len(key) > maxKeyBytes || n > r.maxValue {
		return false
	}
	if until := r.downUntil.Load(); until != 0 && time.Now().UnixNano() < until {
		r.stats.skipped.Add(1)
		return false
	}
	return true
}

// observe records the outcome of one operation: a failure starts a
// backoff, unless the caller's own context ended.
func (r *Redis) observe(ctx context.Context, err error) {
	if err == nil {
		r.downUntil.Store(0)
		if r.down.CompareAndSwap(true, false) {
			r.logger.InfoContext(ctx, "APQ store: Redis is available again")
		}
		return
	}
	if ctx.Err() != nil {
		return
	}
	r.stats.errors.Add(1)
	if r.errCount != nil {
		r.errCount()
	}
	if r.backoff > 0 {
		r.downUntil.Store(time.Now().Add(r.backoff).UnixNano())
	}
	if r.down.CompareAndSwap(false, true) {
		r.logger.WarnContext(ctx, "APQ store: Redis unavailable; persisted queries are per replica until it is back",
			"addr", r.addr, "err", err, "backoff", r.backoff.String())
	}
}
