// The in-process LRU of persisted queries, bounded by count and by bytes.

package apqstore

import (
	"container/list"
	"context"
	"sync"

	"github.com/99designs/gqlgen/graphql"
)

// DefaultLocalBytes bounds the bytes of the queries the local LRU keeps:
// the default 1,000 queries at 4 KiB each.
const DefaultLocalBytes = 4 << 20

// Local is a graphql.Cache[string] that keeps at most maxEntries queries
// and maxBytes bytes of keys and queries, evicting the least recently used.
// Safe for concurrent use.
type Local struct {
	mu         sync.Mutex
	maxEntries int
	maxBytes   int64
	bytes      int64
	order      *list.List // front: most recently used; values *localEntry
	items      map[string]*list.Element
}

type localEntry struct{ key, query string }

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
	return &Local{maxEntries: maxEntries, maxBytes: maxBytes, order: list.New(), items: map[string]*list.Element{}}
}

func entryBytes(key, query string) int64 { return int64(len(key) + len(query)) }

// Get returns the query kept under key and marks it recently used.
func (l *Local) Get(_ context.Context, key string) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.items[key]
	if !ok {
		return "", false
	}
	l.order.MoveToFront(e)
	return e.Value.(*localEntry).query, true
}

// Add keeps query under key, evicting the least recently used queries
// until both bounds hold.
func (l *Local) Add(_ context.Context, key, query string) {
	n := entryBytes(key, query)
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.items[key]; ok {
		l.remove(e)
	}
	if n > l.maxBytes {
		return
	}
	l.items[key] = l.order.PushFront(&localEntry{key: key, query: query})
	l.bytes += n
	for l.bytes > l.maxBytes || l.order.Len() > l.maxEntries {
		l.remove(l.order.Back())
	}
}

func (l *Local) remove(e *list.Element) {
	le := l.order.Remove(e).(*localEntry)
	delete(l.items, le.key)
	l.bytes -= entryBytes(le.key, le.query)
}

// Len and Bytes report what the LRU keeps.
func (l *Local) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.order.Len()
}

// Bytes is the sum of the kept keys' and queries' lengths.
func (l *Local) Bytes() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.bytes
}
