// The merchant identity: an HMAC-SHA256 of the credential pair under a
// per-deployment key (MERCHANT_ID_KEY), so that a Redis dump or a log line
// verifies no guessed or leaked pair offline.

package restclient

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"
	"sync"

	"paygraph/internal/opscope"
)

const (
	MinMerchantKeyBytes = 32                            // the shortest key accepted: HMAC-SHA256's size
	merchantIDLabel     = "paygraph merchant id v1\x00" // separates this use of the key from any other
)

// MerchantKey is the identity key, the same on every replica sharing a Redis;
// safe for concurrent use.
type MerchantKey struct {
	pool sync.Pool // of *merchantMAC
}

type merchantMAC struct {
	h   hash.Hash
	buf [256]byte
	out [sha256.Size]byte
}

// NewMerchantKey returns the identity key of key (copied), at least
// MinMerchantKeyBytes long.
func NewMerchantKey(key []byte) (*MerchantKey, error) {
	if len(key) < MinMerchantKeyBytes {
		return nil, fmt.Errorf("merchant identity key is %d bytes; want at least %d (such as `openssl rand -base64 32`)", len(key), MinMerchantKeyBytes)
	}
	key = append([]byte(nil), key...)
	k := &MerchantKey{}
	k.pool.New = func() any { return &merchantMAC{h: hmac.New(sha256.New, key)} }
	return k, nil
}

// RandomMerchantKey returns a random key, for this process's identities.
func RandomMerchantKey() *MerchantKey {
	key := make([]byte, MinMerchantKeyBytes)
	_, _ = rand.Read(key) // never fails (crypto/rand crashes the program instead)
	k, _ := NewMerchantKey(key)
	return k
}

// Format prints nothing of the key, whatever the verb.
func (k *MerchantKey) Format(f fmt.State, _ rune) { fmt.Fprint(f, "restclient.MerchantKey(redacted)") }

// processMerchantKey names merchants in a context that carries no key.
var processMerchantKey = RandomMerchantKey()

// sum is HMAC(label || uint64 len(apiKey) || apiKey || apiSecret): ("ab","c")
// is not ("a","bc").
func (k *MerchantKey) sum(c Credentials) merchantKey {
	m := k.pool.Get().(*merchantMAC)
	m.h.Reset()
	b := append(m.buf[:0], merchantIDLabel...)
	b = binary.BigEndian.AppendUint64(b, uint64(len(c.APIKey)))
	b = append(b, c.APIKey...)
	b = append(b, c.APISecret...)
	m.h.Write(b)
	var out merchantKey
	copy(out[:], m.h.Sum(m.out[:0]))
	k.pool.Put(m)
	return out
}

// Derive is a key for another use: HMAC-SHA256 under k of a label no identity
// input starts with.
func (k *MerchantKey) Derive(label string) []byte {
	m := k.pool.Get().(*merchantMAC)
	m.h.Reset()
	m.h.Write([]byte("paygraph derived key v1\x00" + label))
	out := m.h.Sum(nil)
	k.pool.Put(m)
	return out
}

type merchantKeyCtx struct{}

// WithMerchantKey returns a context whose pairs (WithCredentials) are named
// under k.
func WithMerchantKey(ctx context.Context, k *MerchantKey) context.Context {
	if k == nil {
		return ctx
	}
	return opscope.WithValue(ctx, merchantKeyCtx{}, k)
}

// MerchantKeyFrom returns the key WithMerchantKey put in ctx, or nil.
func MerchantKeyFrom(ctx context.Context) *MerchantKey {
	k, _ := ctx.Value(merchantKeyCtx{}).(*MerchantKey)
	return k
}

// MerchantOf names the merchant of ctx's pair, its identity in hex; ok is
// false with no usable pair.
func MerchantOf(ctx context.Context) (string, bool) {
	v, ok := credentialsFrom(ctx)
	if !ok {
		return "", false
	}
	return v.merchantName, true
}

// MerchantTag names ctx's merchant in logs as its circuit: 8 bytes of identity
// in hex, or "".
func MerchantTag(ctx context.Context) string {
	v, ok := credentialsFrom(ctx)
	if !ok {
		return ""
	}
	return merchantTag(v.merchant.short())
}
