// Package relay encodes the gateway's Relay pagination cursors: opaque,
// self-contained positions in the REST API's cursor-paginated payment list;
// and walks that list to serve one connection page (Walk), the arithmetic
// that gives every edge a position of its own.
package relay

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"

	"paygraph/restclient"
)

// Position is where a Relay connection continues: fetch the REST page
// that starts at RestCursor ("" for the first page) and skip Skip items of
// it. The REST API only has one cursor per page; this gives every edge its
// own. It also records the status filter it was made under, so that a
// cursor cannot silently continue a differently filtered list.
//
// A REST cursor names where a page starts, whatever its limit, so a
// position stays valid with any page size. It is self-contained: any
// replica can continue any other's page.
type Position struct {
	RestCursor string
	Skip       int
	Status     restclient.PaymentStatus
}

const (
	cursorVersion  = 1
	cursorCheckLen = 4
	// MaxSkip bounds Skip: positions we hand out never skip more
	// than one REST page (100 items).
	MaxSkip        = 100
	maxRestCursor  = 2048
	statusesCount  = 5
	cursorMaxBytes = 1 + 1 + binary.MaxVarintLen64 + maxRestCursor + cursorCheckLen
)

var cursorStatuses = [statusesCount + 1]restclient.PaymentStatus{"",
	restclient.StatusPending, restclient.StatusSucceeded, restclient.StatusFailed,
	restclient.StatusCancelled, restclient.StatusRefunded}

// ErrBadCursor is returned for anything that is not a cursor this gateway made.
var ErrBadCursor = errors.New("bad cursor")

// Encode renders the position as an opaque URL-safe string: version,
// status, skip, REST cursor and a short checksum that catches edits and
// truncation (it is not a signature: the REST cursor inside is the
// caller's own to replay anyway).
func (p Position) Encode() string {
	var buf [64]byte
	b := buf[:0]
	b = append(b, cursorVersion, statusIndex(p.Status))
	b = binary.AppendUvarint(b, uint64(p.Skip))
	b = append(b, p.RestCursor...)
	return encodeRaw(b)
}

// encodeRaw appends the checksum to b and renders it in base64url.
func encodeRaw(b []byte) string {
	sum := sha256.Sum256(b)
	b = append(b, sum[:cursorCheckLen]...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Decode reads a cursor that Encode made. Anything else (a cursor
// edited, truncated, longer than any Encode makes, of another version or
// with a skip beyond MaxSkip) is ErrBadCursor, before any decoding work
// beyond the length check: a caller's cursor is untrusted input.
func Decode(s string) (Position, error) {
	if len(s) == 0 || base64.RawURLEncoding.DecodedLen(len(s)) > cursorMaxBytes {
		return Position{}, ErrBadCursor
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) < 3+cursorCheckLen {
		return Position{}, ErrBadCursor
	}
	body, check := b[:len(b)-cursorCheckLen], b[len(b)-cursorCheckLen:]
	sum := sha256.Sum256(body)
	if string(sum[:cursorCheckLen]) != string(check) || body[0] != cursorVersion || int(body[1]) > statusesCount {
		return Position{}, ErrBadCursor
	}
	skip, n := binary.Uvarint(body[2:])
	if n <= 0 || skip > MaxSkip {
		return Position{}, ErrBadCursor
	}
	return Position{
		RestCursor: string(body[2+n:]),
		Skip:       int(skip),
		Status:     cursorStatuses[body[1]],
	}, nil
}

func statusIndex(s restclient.PaymentStatus) byte {
	for i, v := range cursorStatuses {
		if v == s {
			return byte(i)
		}
	}
	return 0
}
