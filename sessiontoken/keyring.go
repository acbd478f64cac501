package sessiontoken

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"aidanwoods.dev/go-paseto"
	"golang.org/x/crypto/blake2b"
)

// KeyBytes is the length of a v4.local key.
const KeyBytes = 32

// Keyring holds the keys of TOKEN_KEYS: the first mints, every one verifies (rotate: new one
// first, wait TOKEN_MAX_TTL, remove the old). Safe for concurrent use; its forms never show a key.
type Keyring struct {
	keys []ringKey // keys[0] mints
	now  func() time.Time
}

// ringKey is one key with its id and the footer that names it.
type ringKey struct {
	id     string // PASERK "k4.lid." id
	footer []byte // {"kid":"<id>"}, the exact bytes every token minted with it carries
	key    paseto.V4SymmetricKey
}

// footerJSON is the footer of every token: the key's PASERK id.
type footerJSON struct {
	KID string `json:"kid"`
}

// ParseKeyring reads TOKEN_KEYS, comma-separated hex or base64 keys; errors
// name a key's place, never its text.
func ParseKeyring(value string) (*Keyring, error) {
	parts := strings.Split(value, ",")
	keys := make([][]byte, 0, len(parts))
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			return nil, fmt.Errorf("TOKEN_KEYS: key %d of %d is empty", i+1, len(parts))
		}
		k, err := decodeKey(p)
		if err != nil {
			return nil, fmt.Errorf("TOKEN_KEYS: key %d of %d: %w", i+1, len(parts), err)
		}
		keys = append(keys, k)
	}
	return NewKeyring(keys...)
}

// decodeKey reads one key (64 hex digits are never 32 bytes' base64).
func decodeKey(s string) ([]byte, error) {
	if len(s) == 2*KeyBytes {
		k, err := hex.DecodeString(s)
		if err != nil {
			return nil, errors.New("64 characters but not hex digits")
		}
		return k, nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if k, err := enc.Strict().DecodeString(s); err == nil {
			if len(k) != KeyBytes {
				return nil, fmt.Errorf("base64 of %d bytes, want %d", len(k), KeyBytes)
			}
			return k, nil
		}
	}
	return nil, fmt.Errorf("neither %d hex digits nor the base64 of %d bytes (%d characters)", 2*KeyBytes, KeyBytes, len(s))
}

// NewKeyring returns a keyring of keys (KeyBytes long, not all zero, none twice), the first minting.
func NewKeyring(keys ...[]byte) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, errors.New("TOKEN_KEYS: no key")
	}
	kr := &Keyring{keys: make([]ringKey, 0, len(keys)), now: time.Now}
	for i, k := range keys {
		if len(k) != KeyBytes {
			return nil, fmt.Errorf("TOKEN_KEYS: key %d is %d bytes, want %d", i+1, len(k), KeyBytes)
		}
		if bytes.Count(k, []byte{0}) == len(k) {
			return nil, fmt.Errorf("TOKEN_KEYS: key %d is all zero bytes", i+1)
		}
		pk, err := paseto.V4SymmetricKeyFromBytes(k)
		if err != nil {
			return nil, fmt.Errorf("TOKEN_KEYS: key %d: not a v4.local key", i+1)
		}
		id := localKeyID(k)
		if j := slices.IndexFunc(kr.keys, func(r ringKey) bool { return r.id == id }); j >= 0 {
			return nil, fmt.Errorf("TOKEN_KEYS: key %d repeats key %d", i+1, j+1)
		}
		footer, _ := json.Marshal(footerJSON{KID: id})
		kr.keys = append(kr.keys, ringKey{id: id, footer: footer, key: pk})
	}
	return kr, nil
}

// NewRandomKeyring returns a keyring of one fresh random key (sandbox mode).
func NewRandomKeyring() *Keyring {
	kr, err := ParseKeyring(GenerateKey())
	if err != nil {
		panic("sessiontoken: random key refused: " + err.Error()) // 2^-256: all zero
	}
	return kr
}

// GenerateKey returns a new random key as 64 hex digits.
func GenerateKey() string {
	k := make([]byte, KeyBytes)
	_, _ = rand.Read(k) // never fails (crypto/rand, Go 1.24+)
	return hex.EncodeToString(k)
}

// WithClock returns a copy of k (sharing its keys) reading the time from now.
func (k *Keyring) WithClock(now func() time.Time) *Keyring {
	c := *k
	if now == nil {
		now = time.Now
	}
	c.now = now
	return &c
}

// localKeyID is the PASERK "lid" of a v4.local key: a one-way hash made to be published.
func localKeyID(key []byte) string {
	const h = "k4.lid."
	d, err := blake2b.New(33, nil)
	if err != nil {
		panic(err) // 33 is a valid size
	}
	_, _ = io.WriteString(d, h+"k4.local."+base64.RawURLEncoding.EncodeToString(key)) // the key's PASERK
	return h + base64.RawURLEncoding.EncodeToString(d.Sum(nil))
}

// String describes the keyring without a key (value receivers cover a Keyring value too).
func (k Keyring) String() string {
	if len(k.keys) == 0 {
		return "keyring{none}"
	}
	return "keyring{" + strconv.Itoa(len(k.keys)) + " keys, minting " + k.keys[0].id + "}"
}

// Format makes every fmt verb print String, never the keys.
func (k Keyring) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, k.String()) }

// LogValue implements slog.LogValuer.
func (k Keyring) LogValue() slog.Value { return slog.StringValue(k.String()) }

// MarshalJSON keeps encoding/json from reaching the keys.
func (k Keyring) MarshalJSON() ([]byte, error) { return json.Marshal(k.String()) }
