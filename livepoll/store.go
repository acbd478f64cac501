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

// Store shares pollers between replicas: the lease's holder polls a key and appends its transitions,
// the others read them. Each method is called at most once a tick, bounded; its answers are untrusted.
type Store interface {
	// Lease takes key's lease for ttl when free, or renews this replica's, reporting whether it holds
	// it; the transitions are kept for keep more.
	Lease(ctx context.Context, key Key, ttl, keep time.Duration) (bool, error)
	// Release gives key's lease up if this replica holds it.
	Release(ctx context.Context, key Key)
	// Append records r after the transition prev (0: none) unless the Store holds a later one, and
	// returns the id of its last transition (r.ID when recorded); it keeps the newest MaxKept for keep.
	Append(ctx context.Context, key Key, r Record, prev uint64, keep time.Duration) (uint64, error)
	// Since returns the kept transitions of key with an id above after, oldest first (all for 0).
	Since(ctx context.Context, key Key, after uint64) ([]Record, error)
}
