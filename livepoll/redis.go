// RedisStore: the Store of a fleet. What Redis holds is untrusted: a value
// that does not parse is skipped and counted, junk blocking the stream is
// deleted, a lease no replica could have taken is taken over.

package livepoll

import (
	"context"
	"crypto/cipher"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultRedisTimeout bounds each Redis call of a RedisStore.
const DefaultRedisTimeout = 500 * time.Millisecond

// What a RedisStore reports to CountingSkipped: the kind of value skipped.
const (
	SkippedStream = "stream" // an event stream entry: its id, its fields, or (sealed) it does not open
	SkippedLease  = "lease"  // a lease no replica wrote
)

// idSlack is how far past the clock an event id (Unix ms at first) may be: any skew.
const idSlack = 24 * time.Hour

const leaseValueLen = 24 // hex digits of NewRedisStore's me

// RedisStore keeps, per key, two Redis keys in one hash tag (one cluster slot):
//
//	paygraph:live:{<merchant>:<kind>:<id>}:lease   the replica polling it (SET NX PX), lives unless renewed
//	paygraph:live:{<merchant>:<kind>:<id>}:events  a stream of its newest MaxKept transitions, entry id 0-<event id>,
//	                                              fields f (fingerprint), p (phase), d (the state's JSON; f and d
//	                                              sealed with Sealed), expiring ResumeWindow after the last write
type RedisStore struct {
	rdb     redis.UniversalClient
	me      string // this replica's lease value
	timeout time.Duration
	aead    cipher.AEAD // seals f and d (Sealed); nil: kept as they are
	skipped func(what string, n int)
}

// Sealed returns s sealing each state's JSON and fingerprint with aead (shared by the replicas),
// bound to key, field, id and phase: a moved entry does not open.
func (s *RedisStore) Sealed(aead cipher.AEAD) *RedisStore {
	c := *s
	c.aead = aead
	return &c
}

// CountingSkipped returns s calling count each time it skips n values that do not parse.
func (s *RedisStore) CountingSkipped(count func(what string, n int)) *RedisStore {
	c := *s
	c.skipped = count
	return &c
}

func (s *RedisStore) skip(what string, n int) {
	if s.skipped != nil && n > 0 {
		s.skipped(what, n)
	}
}

// aad binds a sealed field to its stream, field, event id and phase.
func aad(stream, field string, id uint64, ph Phase) []byte {
	return append(fmt.Appendf(nil, "%s\x00%s\x00%d\x00", stream, field, id), byte('0'+ph))
}

// seal is nonce || AEAD(v), bound by aad; v as it is without a key.
func (s *RedisStore) seal(stream, field string, id uint64, ph Phase, v []byte) []byte {
	if s.aead == nil {
		return v
	}
	out := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(v)+s.aead.Overhead())
	_, _ = rand.Read(out) // never fails (crypto/rand crashes the program instead)
	return s.aead.Seal(out, out, v, aad(stream, field, id, ph))
}

func (s *RedisStore) open(stream, field string, id uint64, ph Phase, v []byte) ([]byte, bool) {
	if s.aead == nil {
		return v, true
	}
	n := s.aead.NonceSize()
	if len(v) < n {
		return nil, false
	}
	out, err := s.aead.Open(nil, v[:n], v[n:], aad(stream, field, id, ph))
	return out, err == nil
}

// NewRedisStore returns a Store on rdb; timeout bounds each call (zero: DefaultRedisTimeout).
func NewRedisStore(rdb redis.UniversalClient, timeout time.Duration) *RedisStore {
	b := make([]byte, leaseValueLen/2)
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

// leaseScript takes the lease when free or renews this replica's, keeping the transitions for keep more;
// one no replica writes (not 24 lower-case hex digits, no expiry, past 4 ttl) is taken over: 2.
var leaseScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
local took = 1
if v == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
elseif v then
  local pt = redis.call('PTTL', KEYS[1])
  if #v == 24 and not string.find(v, '[^0-9a-f]') and pt > 0 and pt <= 4 * tonumber(ARGV[2]) then
    return 0
  end
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  took = 2
elseif not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return 0
end
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return took
`)

var releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)

// appendScript adds a transition unless the stream holds an entry after ARGV[1], returning "added" or
// the last entry id; ARGV[8] on are junk to delete first, the last id set back for XADD to accept ours.
var appendScript = redis.NewScript(`
if #ARGV > 7 then
  redis.call('XDEL', KEYS[1], unpack(ARGV, 8))
  local top = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
  if #top == 0 then
    redis.call('DEL', KEYS[1])
  else
    redis.call('XSETID', KEYS[1], top[1][1])
  end
end
local top = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
if #top > 0 then
  local seq = tonumber(string.match(top[1][1], '^0%-(%d+)$'))
  if not seq or seq > tonumber(ARGV[1]) or seq >= tonumber(ARGV[2]) then return top[1][1] end
end
redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[3], '0-' .. ARGV[2], 'f', ARGV[5], 'p', ARGV[6], 'd', ARGV[7])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 'added'
`)

func (s *RedisStore) Lease(ctx context.Context, key Key, ttl, keep time.Duration) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	lease, events := redisKeys(key)
	n, err := leaseScript.Run(ctx, s.rdb, []string{lease, events}, s.me, ttl.Milliseconds(), keep.Milliseconds()).Int()
	if n == 2 {
		s.skip(SkippedLease, 1)
	}
	return n >= 1, err
}

func (s *RedisStore) Release(ctx context.Context, key Key) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	lease, _ := redisKeys(key)
	_ = releaseScript.Run(ctx, s.rdb, []string{lease}, s.me).Err()
}

// Append records r after prev. Refused, it reads the entries after prev: if none parses, they are
// deleted and r recorded, so junk never stops the stream.
func (s *RedisStore) Append(ctx context.Context, key Key, r Record, prev uint64, keep time.Duration) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	_, events := redisKeys(key)
	if id, added, err := s.append(ctx, events, r, prev, keep, nil); err != nil || added {
		return id, err
	}
	recs, junk, err := s.read(ctx, events, prev)
	if err != nil {
		return 0, err
	}
	if len(recs) > 0 {
		return recs[len(recs)-1].ID, nil // another replica's transition: refused
	}
	if len(junk) == 0 {
		return prev, nil // nothing after prev any more (trimmed or expired): the caller tries again
	}
	s.skip(SkippedStream, len(junk))
	id, _, err := s.append(ctx, events, r, prev, keep, junk)
	return id, err
}

// append runs appendScript: r.ID and true when it added r, else the last
// entry's id (prev when unreadable).
func (s *RedisStore) append(ctx context.Context, events string, r Record, prev uint64, keep time.Duration, drop []any) (uint64, bool, error) {
	args := append([]any{strconv.FormatUint(prev, 10), strconv.FormatUint(r.ID, 10), MaxKept, keep.Milliseconds(),
		s.seal(events, "f", r.ID, r.Phase, []byte(r.Fingerprint)), int(r.Phase), s.seal(events, "d", r.ID, r.Phase, r.Data)}, drop...)
	top, err := appendScript.Run(ctx, s.rdb, []string{events}, args...).Text()
	if err != nil {
		return 0, false, err
	}
	if top == "added" {
		return r.ID, true, nil
	}
	if id, ok := entryID(top); ok {
		return id, false, nil
	}
	return prev, false, nil
}

// entryID reads a stream entry id 0-<event id>, not zero nor past the clock (idSlack).
func entryID(s string) (uint64, bool) {
	seq, ok := strings.CutPrefix(s, "0-")
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseUint(seq, 10, 64)
	if err != nil || id == 0 || id > uint64(time.Now().Add(idSlack).UnixMilli()) {
		return 0, false
	}
	return id, true
}

// parse reads one stream entry; false for one RedisStore did not write or that does not open.
func (s *RedisStore) parse(events string, m redis.XMessage) (Record, bool) {
	id, ok := entryID(m.ID)
	if !ok || len(m.Values) != 3 {
		return Record{}, false
	}
	f, okf := m.Values["f"].(string)
	p, okp := m.Values["p"].(string)
	d, okd := m.Values["d"].(string)
	if !okf || !okp || !okd || len(p) != 1 || p[0] < '0' || p[0] > '0'+byte(PhaseFinal) {
		return Record{}, false
	}
	ph := Phase(p[0] - '0')
	fp, okf := s.open(events, "f", id, ph, []byte(f))
	data, okd := s.open(events, "d", id, ph, []byte(d))
	if !okf || !okd {
		return Record{}, false
	}
	return Record{ID: id, Fingerprint: string(fp), Phase: ph, Data: data}, true
}

// Since returns the transitions after after; junk is skipped and counted, not an error.
func (s *RedisStore) Since(ctx context.Context, key Key, after uint64) ([]Record, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	_, events := redisKeys(key)
	recs, junk, err := s.read(ctx, events, after)
	s.skip(SkippedStream, len(junk))
	return recs, err
}

// read returns the entries after after that parse, and the others' ids.
func (s *RedisStore) read(ctx context.Context, events string, after uint64) ([]Record, []any, error) {
	msgs, err := s.rdb.XRangeN(ctx, events, "(0-"+strconv.FormatUint(after, 10), "+", 2*MaxKept).Result()
	if err != nil {
		return nil, nil, err
	}
	recs := make([]Record, 0, len(msgs))
	var junk []any
	for _, m := range msgs {
		if r, ok := s.parse(events, m); ok {
			recs = append(recs, r)
		} else {
			junk = append(junk, m.ID)
		}
	}
	return recs, junk, nil
}

var _ Store = (*RedisStore)(nil)
