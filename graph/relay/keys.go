package relay

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
)

// MinKeyBytes is the shortest cursor key accepted: 256 bits, the size of
// the HMAC-SHA256 output, so the key is never the weak part.
const MinKeyBytes = 32

// Keys are the gateway's cursor keys (CURSOR_KEYS). The first signs new
// cursors; every one verifies, so a key can be rotated in ahead of being
// used ([new, old] everywhere, then drop old once its cursors no longer
// matter). Every replica that serves one client needs the same keys.
type Keys struct {
	keys [][]byte
}

// Derive is a key for another use than cursors, made from the signing
// (first) key with HMAC-SHA256 under label: it changes when the signing
// key does. The gateway names merchants with it when MERCHANT_ID_KEY is
// unset, so that replicas sharing CURSOR_KEYS share their merchants too.
func (k *Keys) Derive(label string) []byte {
	m := hmac.New(sha256.New, k.keys[0])
	m.Write([]byte(label))
	return m.Sum(nil)
}

// Format prints how many keys there are, never a key, whatever the verb
// (a Keys may end up in a %+v of the configuration).
func (k *Keys) Format(f fmt.State, _ rune) {
	n := 0
	if k != nil {
		n = len(k.keys)
	}
	fmt.Fprintf(f, "relay.Keys(%d, redacted)", n)
}

// Format prints nothing of the signer's MAC state, which is derived from a
// key and a credential pair.
func (s *Signer) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, "relay.Signer(redacted)") }

// NewKeys returns keys that sign with keys[0] and verify with any of them.
func NewKeys(keys ...[]byte) (*Keys, error) {
	if len(keys) == 0 {
		return nil, errors.New("no cursor key")
	}
	k := &Keys{keys: make([][]byte, len(keys))}
	for i, key := range keys {
		if len(key) < MinKeyBytes {
			return nil, fmt.Errorf("cursor key %d is %d bytes; want at least %d (such as `openssl rand -base64 32`)", i+1, len(key), MinKeyBytes)
		}
		k.keys[i] = append([]byte(nil), key...)
	}
	return k, nil
}

// RandomKeys returns one fresh random key: cursors then only work on this
// process (a restart or another replica refuses them).
func RandomKeys() *Keys {
	key := make([]byte, MinKeyBytes)
	_, _ = rand.Read(key) // never fails (crypto/rand: it crashes the program instead)
	return &Keys{keys: [][]byte{key}}
}

// ParseKeys reads CURSOR_KEYS: comma-separated keys, each hex (an even
// number of hex digits) or base64 (standard or URL alphabet, padded or
// not), each at least MinKeyBytes once decoded. Errors name a key by its
// position, never by its value.
func ParseKeys(s string) (*Keys, error) {
	var keys [][]byte
	for i, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		key, err := decodeKey(part)
		if err != nil {
			return nil, fmt.Errorf("cursor key %d is %w", i+1, err)
		}
		keys = append(keys, key)
	}
	return NewKeys(keys...)
}

func decodeKey(s string) ([]byte, error) {
	if s == "" {
		return nil, errors.New("empty")
	}
	if len(s)%2 == 0 {
		if b, err := hex.DecodeString(s); err == nil {
			return b, nil
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, errors.New("neither hex nor base64")
}

// For returns the signer of one merchant's cursors. The MAC key of a
// merchant under gateway key K is HMAC-SHA256(K, label || sha256(len(apiKey)
// || apiKey || apiSecret)): a cursor made for one credential pair is
// refused for any other, and neither the pair nor K can be recovered from
// it. The signer is meant for one request: it holds MAC state derived
// from the pair, which must not outlive the request.
func (k *Keys) For(apiKey, apiSecret string) *Signer {
	s := &Signer{keys: k}
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	h.Write(binary.AppendUvarint(n[:0], uint64(len(apiKey))))
	h.Write([]byte(apiKey))
	h.Write([]byte(apiSecret))
	h.Sum(s.cred[:0])
	return s
}

// merchantKeyLabel separates this use of a gateway key from any other.
const merchantKeyLabel = "paygraph cursor v2\x00"

func (k *Keys) merchantKey(i int, cred *[sha256.Size]byte) []byte {
	m := hmac.New(sha256.New, k.keys[i])
	m.Write([]byte(merchantKeyLabel))
	m.Write(cred[:])
	return m.Sum(nil)
}
