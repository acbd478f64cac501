// The in-process LRU of persisted queries, bounded by count and by bytes.

package apqstore

import (
	"context"
	"sync"

	"github.com/99designs/gqlgen/graphql"
	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// DefaultLocalBytes bounds the bytes of the queries the local LRU keeps:
// the default 1,000 queries at 4 KiB each.
const DefaultLocalBytes = 4 << 20

// Local is a graphql.Cache[string], safe for concurrent use, that keeps at
// most maxEntries queries and maxBytes bytes, evicting the least recently used.
type Local struct {
	mu       sync.Mutex
	maxBytes int64
	bytes    int64
	lru      *simplelru.LRU[string, string]
}

var _ graphql.Cache[string] = (*Local)(nil)

// NewLocal returns an empty LRU; a bound <= 0 takes its default
// (DefaultLocalSize, DefaultLocalBytes).
func NewLocal(maxEntries int, maxBytes int64) *Local {
	if maxEntries <= 0 {
		maxEntries = DefaultLocalSize
	}
	if maxBytes <= 0 {
		maxBytes = DefaultLocalBytes
	}
	l := &Local{maxBytes: maxBytes}
	l.lru, _ = simplelru.NewLRU(maxEntries, func(key, query string) { l.bytes -= entryBytes(key, query) })
	return l
}

func entryBytes(key, query string) int64 { return int64(len(key) + len(query)) }

// Get returns the query kept under key and marks it recently used.
func (l *Local) Get(_ context.Context, key string) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lru.Get(key)
}

// Add keeps query under key, evicting the least recently used queries until
// both bounds hold.
func (l *Local) Add(_ context.Context, key, query string) {
	n := entryBytes(key, query)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lru.Remove(key)
	if n > l.maxBytes {
		return
	}
	l.bytes += n
	l.lru.Add(key, query)
	for l.bytes > l.maxBytes {
		l.lru.RemoveOldest()
	}
}

// Len is the number of kept queries; Bytes the sum of their keys' and texts'
// lengths.
func (l *Local) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lru.Len()
}

func (l *Local) Bytes() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.bytes
}
