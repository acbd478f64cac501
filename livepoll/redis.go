// RedisStore: the Store of a fleet, in the Redis every replica already
// shares (REDIS_URL), on go-redis v9.

package livepoll

import (
	"context"
	"crypto/cipher"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultRedisTimeout bounds each Redis call of a RedisStore: past it the
// poller acts as without a Store for that tick.
const DefaultRedisTimeout = 500 * time.Millisecond

// RedisStore keeps, per key, two Redis keys with one hash tag (one slot on
// a cluster):
//
//	paygraph:live:{<merchant>:<kind>:<id>}:lease   the replica polling it (SET NX PX), lives two ticks unless renewed
//	paygraph:live:{<merchant>:<kind>:<id>}:events  a stream of its newest MaxKept transitions, entry id 0-<event id>,
//	                                              fields f (fingerprint), p (phase), d (the state's JSON);
//	                                              f and d sealed (AES-GCM) when the store has a key (Sealed)
//	                                              it expires ResumeWindow after the last renewal or append
//
// The merchant is Key.Merchant as the caller derives it (the identity its
// other Redis keys use), never a secret.
type RedisStore struct {
	rdb     redis.UniversalClient
	me      string // this replica's lease value
	timeout time.Duration
	aead    cipher.AEAD // seals f and d (Sealed); nil: kept as they are
}

// Sealed returns s sealing what it keeps of each state (its JSON, which
// holds a customer's name, email, phone and address, and its fingerprint)
// with aead, bound to the key and field it is kept under: a Redis dump or
// a replica of Redis holds no customer data, and an entry moved to another
// key does not open. Every replica sharing the Redis needs the same key; an
// entry that does not open (another key, or a rotated one) is an error
// of Since, after which the poller polls for itself.
func (s *RedisStore) Sealed(aead cipher.AEAD) *RedisStore {
	c := *s
	c.aead = aead
	return &c
}

// seal is nonce || AEAD(v), with the stream key and field as associated
// data; v as it is without a key.
func (s *RedisStore) seal(stream, field string, v []byte) []byte {
	if s.aead == nil {
		return v
	}
	out := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(v)+s.aead.Overhead())
	_, _ = rand.Read(out) // never fails (crypto/rand crashes the program instead)
	return s.aead.Seal(out, out, v, []byte(stream+"\x00"+field))
}

func (s *RedisStore) open(stream, field string, v []byte) ([]byte, error) {
	if s.aead == nil {
		return v, nil
	}
	n := s.aead.NonceSize()
	if len(v) < n {
		return nil, errors.New("livepoll: a sealed stream entry too short to open")
	}
	out, err := s.aead.Open(nil, v[:n], v[n:], []byte(stream+"\x00"+field))
	if err != nil {
		return nil, errors.New("livepoll: a stream entry that does not open under this replica's key")
	}
	return out, nil
}

// NewRedisStore returns a Store on rdb; timeout bounds each call (zero:
// DefaultRedisTimeout).
func NewRedisStore(rdb redis.UniversalClient, timeout time.Duration) *RedisStore {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	if timeout <= 0 {
		timeout = DefaultRedisTimeout
	}
	return &RedisStore{rdb: rdb, me: hex.EncodeToString(b), timeout: timeout}
}

func redisKeys(k Key) (lease, events string) {
	base := "paygraph:live:{" + k.Merchant + ":" + k.Kind + ":" + k.ID + "}:"
	return base + "lease", base + "events"
}

// leaseScript takes the lease when free (SET NX PX) or renews it when it
// is this replica's, and then keeps the transitions for keep more.
var leaseScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
elseif v then
  return 0
elseif not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return 0
end
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return 1
`)

var releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)

// appendScript adds a transition unless the stream holds a later one than
// the one it follows (ARGV[1]); it returns the stream's last event id.
var appendScript = redis.NewScript(`
local last, lastid = 0, '0'
local top = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
if #top > 0 then
  lastid = string.match(top[1][1], '%-(%d+)$')
  last = tonumber(lastid)
end
if last > tonumber(ARGV[1]) or last >= tonumber(ARGV[2]) then return lastid end
redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[3], '0-' .. ARGV[2], 'f', ARGV[5], 'p', ARGV[6], 'd', ARGV[7])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return ARGV[2]
`)

func (s *RedisStore) Lease(ctx context.Context, key Key, ttl, keep time.Duration) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	lease, events := redisKeys(key)
	n, err := leaseScript.Run(ctx, s.rdb, []string{lease, events}, s.me, ttl.Milliseconds(), keep.Milliseconds()).Int()
	return n == 1, err
}

func (s *RedisStore) Release(ctx context.Context, key Key) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	lease, _ := redisKeys(key)
	_ = releaseScript.Run(ctx, s.rdb, []string{lease}, s.me).Err()
}

func (s *RedisStore) Append(ctx context.Context, key Key, r Record, prev uint64, keep time.Duration) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	_, events := redisKeys(key)
	v, err := appendScript.Run(ctx, s.rdb, []string{events},
		strconv.FormatUint(prev, 10), strconv.FormatUint(r.ID, 10), MaxKept, keep.Milliseconds(),
		s.seal(events, "f", []byte(r.Fingerprint)), int(r.Phase), s.seal(events, "d", r.Data)).Text()
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(v, 10, 64)
}

func (s *RedisStore) Since(ctx context.Context, key Key, after uint64) ([]Record, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	_, events := redisKeys(key)
	msgs, err := s.rdb.XRangeN(ctx, events, "(0-"+strconv.FormatUint(after, 10), "+", 2*MaxKept).Result()
	if err != nil {
		return nil, err
	}
	out := make([]Record, 0, len(msgs))
	for _, m := range msgs {
		seq, ok := strings.CutPrefix(m.ID, "0-")
		id, err := strconv.ParseUint(seq, 10, 64)
		if !ok || err != nil {
			return nil, errors.New("livepoll: a stream entry id not written by RedisStore")
		}
		f, _ := m.Values["f"].(string)
		p, _ := m.Values["p"].(string)
		d, _ := m.Values["d"].(string)
		ph, _ := strconv.Atoi(p)
		fp, err := s.open(events, "f", []byte(f))
		if err != nil {
			return nil, err
		}
		data, err := s.open(events, "d", []byte(d))
		if err != nil {
			return nil, err
		}
		out = append(out, Record{ID: id, Fingerprint: string(fp), Phase: Phase(ph), Data: data})
	}
	return out, nil
}
