// The Store: what replicas share so that one of them polls a key for the
// whole fleet and the others read its transitions (RedisStore).

package livepoll

import (
	"context"
	"time"
)

// Record is a transition as a Store keeps it.
type Record struct {
	ID          uint64
	Fingerprint string
	Phase       Phase
	Data        []byte // Snapshot.Data
}

// Store shares pollers between replicas: one replica at a time, the
// lease's holder, polls a key and appends its transitions; the others read
// them. Its methods are called by pollers only, at most once per tick
// each, and must bound their own duration. What it returns is untrusted:
// an entry that does not parse is skipped, never a transition.
type Store interface {
	// Lease takes key's lease for ttl when it is free, or renews it when
	// it is this replica's, and reports whether this replica holds it
	// now. While held, the key's transitions are kept for keep more.
	Lease(ctx context.Context, key Key, ttl, keep time.Duration) (bool, error)
	// Release gives key's lease up if this replica holds it.
	Release(ctx context.Context, key Key)
	// Append records r as the transition after the one with id prev (0:
	// none) unless the Store holds a later one than prev: then it records
	// nothing. It returns the id of the Store's last transition after the
	// call (r.ID when recorded), and keeps the key's transitions for keep
	// (the newest MaxKept).
	Append(ctx context.Context, key Key, r Record, prev uint64, keep time.Duration) (uint64, error)
	// Since returns the kept transitions of key with an id above after,
	// oldest first (all of them for 0).
	Since(ctx context.Context, key Key, after uint64) ([]Record, error)
}
