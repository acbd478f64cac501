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

// MinKeyBytes is the shortest cursor key accepted: 256 bits, HMAC-SHA256's output.
const MinKeyBytes = 32

// Keys are the gateway's cursor keys (CURSOR_KEYS): the first signs, every
// one verifies, so a key can be rotated in ahead of its use.
type Keys struct{ keys [][]byte }

// Derive is a key for another use, HMAC-SHA256 of label under the signing
// key (the merchant ids' key when MERCHANT_ID_KEY is unset).
func (k *Keys) Derive(label string) []byte {
	m := hmac.New(sha256.New, k.keys[0])
	m.Write([]byte(label))
	return m.Sum(nil)
}

// Format prints how many keys there are, never a key, whatever the verb.
func (k *Keys) Format(f fmt.State, _ rune) {
	n := 0
	if k != nil {
		n = len(k.keys)
	}
	fmt.Fprintf(f, "relay.Keys(%d, redacted)", n)
}

// Format prints nothing of the signer's MAC state.
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

// RandomKeys returns one fresh random key, whose cursors only this process takes.
func RandomKeys() *Keys {
	key := make([]byte, MinKeyBytes)
	_, _ = rand.Read(key) // never fails (crypto/rand: it crashes the program instead)
	return &Keys{keys: [][]byte{key}}
}

// ParseKeys reads CURSOR_KEYS: comma-separated keys of at least
// MinKeyBytes, each hex or base64 (any alphabet, padded or not). Errors
// name a key by its position, never its value.
func ParseKeys(s string) (*Keys, error) {
	var keys [][]byte
	for i, part := range strings.Split(s, ",") {
		key, err := decodeKey(strings.TrimSpace(part))
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
	if b, err := hex.DecodeString(s); err == nil { // an odd length is not hex
		return b, nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, errors.New("neither hex nor base64")
}

// For returns the signer of one merchant's cursors, for one request. Its
// MAC key under gateway key K is HMAC-SHA256(K, label || sha256(len(apiKey)
// || apiKey || apiSecret)): a cursor of one credential pair fails any other.
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
