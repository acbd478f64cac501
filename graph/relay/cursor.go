// Package relay encodes the gateway's Relay pagination cursors: opaque,
// self-contained positions in the REST API's payment list, signed so that
// only the gateway can make one, for one merchant; and walks that list to
// serve one connection page (Walk).
package relay

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"hash"
	"math/bits"
	"slices"
	"sync"

	"paygraph/restclient"
)

// Position is where a Relay connection continues: the REST page starting
// at RestCursor ("" first), Skip items into it, which gives every edge a
// cursor of its own at any page size; Status is the filter it was made
// under, so a cursor cannot continue a differently filtered list.
type Position struct {
	RestCursor string
	Skip       int
	Status     restclient.PaymentStatus
}

const (
	cursorVersion  = 2   // 2: an HMAC-SHA256 tag keyed per merchant
	TagLen         = 16  // the length of the truncated HMAC-SHA256 tag: 128 bits
	MaxSkip        = 100 // bounds Skip: positions never skip more than one REST page
	maxRestCursor  = 2048
	statusesCount  = 5
	cursorMaxBytes = 1 + 1 + binary.MaxVarintLen64 + maxRestCursor + TagLen
)

var cursorStatuses = [statusesCount + 1]restclient.PaymentStatus{"",
	restclient.StatusPending, restclient.StatusSucceeded, restclient.StatusFailed,
	restclient.StatusCancelled, restclient.StatusRefunded}

// ErrBadCursor is returned for anything that is not a cursor this gateway
// made for this merchant with one of its current keys.
var ErrBadCursor = errors.New("bad cursor")

// cursorText is the cursor's text form, strict so that a cursor has exactly one text.
var cursorText = base64.RawURLEncoding.Strict()

// Signer makes and checks the cursors of one merchant (credential pair)
// for one request; safe for concurrent use.
type Signer struct {
	keys  *Keys
	cred  [sha256.Size]byte // sha256 of the credential pair, see For
	mu    sync.Mutex
	macs  []hash.Hash // macs[i]: HMAC keyed by the merchant's key under keys.keys[i], made when first needed
	first [1]hash.Hash
}

// Encode renders p, within bounds, as base64url of version, status, skip,
// REST cursor and the merchant-keyed tag over them.
func (s *Signer) Encode(p Position) string {
	n := 2 + uvarintLen(uint64(p.Skip)) + len(p.RestCursor)
	// One allocation for the binary form (with room for the whole MAC) and
	// the text; the string is the second.
	rawCap := n + sha256.Size
	buf := make([]byte, rawCap+base64.RawURLEncoding.EncodedLen(n+TagLen))
	raw := buf[:0:rawCap]
	raw = append(raw, cursorVersion, statusIndex(p.Status))
	raw = binary.AppendUvarint(raw, uint64(p.Skip))
	raw = append(raw, p.RestCursor...)
	s.mu.Lock()
	raw = s.sumLocked(0, raw)
	s.mu.Unlock()
	text := buf[rawCap:]
	base64.RawURLEncoding.Encode(text, raw[:n+TagLen])
	return string(text)
}

// Decode returns the position in c, or ErrBadCursor when c is not, byte
// for byte, a cursor this merchant was given under one of the keys.
// Nothing in c is trusted before its tag is checked.
func (s *Signer) Decode(c string) (Position, error) {
	size := base64.RawURLEncoding.DecodedLen(len(c))
	if len(c) == 0 || size > cursorMaxBytes {
		return Position{}, ErrBadCursor
	}
	buf := make([]byte, size, size+sha256.Size)
	m, err := cursorText.Decode(buf, []byte(c))
	// The decoder skips '\r' and '\n'; only the exact text is a cursor.
	if err != nil || m != size || base64.RawURLEncoding.EncodedLen(m) != len(c) || m < 3+TagLen {
		return Position{}, ErrBadCursor
	}
	body, tag := buf[:m-TagLen], buf[m-TagLen:m]
	var want [TagLen]byte
	copy(want[:], tag)
	ok := false
	s.mu.Lock()
	for i := range s.keys.keys {
		sum := s.sumLocked(i, body)
		if hmac.Equal(sum[len(body):], want[:]) {
			ok = true
			break
		}
	}
	s.mu.Unlock()
	if !ok || body[0] != cursorVersion || int(body[1]) > statusesCount {
		return Position{}, ErrBadCursor
	}
	skip, k := binary.Uvarint(body[2:])
	if k <= 0 || skip > MaxSkip || k != uvarintLen(skip) {
		return Position{}, ErrBadCursor
	}
	return Position{RestCursor: string(body[2+k:]), Skip: int(skip), Status: cursorStatuses[body[1]]}, nil
}

// sumLocked appends the tag of body under key i to body, within its
// capacity (a whole MAC). s.mu is held.
func (s *Signer) sumLocked(i int, body []byte) []byte {
	if s.macs == nil {
		s.macs = s.first[:]
		if len(s.keys.keys) > 1 {
			s.macs = make([]hash.Hash, len(s.keys.keys))
		}
	}
	mac := s.macs[i]
	if mac == nil {
		mac = hmac.New(sha256.New, s.keys.merchantKey(i, &s.cred))
		s.macs[i] = mac
	}
	mac.Reset()
	mac.Write(body)
	return mac.Sum(body)[:len(body)+TagLen]
}

// uvarintLen is the length of v's uvarint: 7 bits a byte.
func uvarintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }

// statusIndex is s's index in cursorStatuses, 0 when unknown.
func statusIndex(s restclient.PaymentStatus) byte {
	return byte(max(slices.Index(cursorStatuses[:], s), 0))
}

// PeekSkip reads the skip of cursor c without checking its tag, for the
// REST-call plan only: Decode refuses a forged cursor before any call.
func PeekSkip(c string) (skip int, ok bool) {
	if len(c) == 0 || base64.RawURLEncoding.DecodedLen(len(c)) > cursorMaxBytes {
		return 0, false
	}
	buf := make([]byte, base64.RawURLEncoding.DecodedLen(len(c)))
	m, err := cursorText.Decode(buf, []byte(c))
	if err != nil || m < 3+TagLen || buf[0] != cursorVersion {
		return 0, false
	}
	s, k := binary.Uvarint(buf[2 : m-TagLen])
	if k <= 0 || s > MaxSkip {
		return 0, false
	}
	return int(s), true
}
