// Package selcache keeps what is computed once per selection set of a
// parsed document (fast-path plans, cost plans) across the requests that
// run it. A key is the document (held weakly), a tag, one more node and a
// selection set's nodes, by address. It is bounded, lock-free and
// set-associative; a miss only costs the computation again.
package selcache

import (
	"paygraph/internal/unsafeconv"
	"sync/atomic"
	"weak"

	"github.com/vektah/gqlparser/v2/ast"
)

// Cache is one such cache; its zero value is ready.
type Cache[V any] struct {
	buckets [selBuckets][selWays]atomic.Pointer[selEntry[V]]
	victim  atomic.Uint32
}

const (
	selBuckets = 256
	selWays    = 4
)

type selEntry[V any] struct {
	doc   weak.Pointer[ast.QueryDocument]
	tag   string
	extra uintptr
	sels  []uintptr
	v     V
}

// selAddr is the address of a selection node (0: not a node we know).
func selAddr(s ast.Selection) uintptr {
	switch s := s.(type) {
	case *ast.Field:
		return unsafeconv.Addr(s)
	case *ast.InlineFragment:
		return unsafeconv.Addr(s)
	case *ast.FragmentSpread:
		return unsafeconv.Addr(s)
	}
	return 0
}

func selHash(doc *ast.QueryDocument, tag string, extra uintptr, sel ast.SelectionSet) (uint64, bool) {
	h := uint64(unsafeconv.Addr(doc))*0x9E3779B97F4A7C15 ^ uint64(extra)
	for i := 0; i < len(tag); i++ {
		h = (h ^ uint64(tag[i])) * 0x100000001B3
	}
	for _, s := range sel {
		a := selAddr(s)
		if a == 0 {
			return 0, false
		}
		h = (h ^ uint64(a)) * 0x100000001B3
	}
	return h ^ h>>29, true
}

// Get returns the value of the key, or compute's, which it keeps. ok is
// false, and compute is not called, for a key it cannot make (no
// document, or a selection of an unknown kind).
func (c *Cache[V]) Get(doc *ast.QueryDocument, tag string, extra *ast.Field, sel ast.SelectionSet, compute func() V) (v V, ok bool) {
	if doc == nil {
		return v, false
	}
	x := unsafeconv.Addr(extra)
	h, ok := selHash(doc, tag, x, sel)
	if !ok {
		return v, false
	}
	bucket := &c.buckets[h%selBuckets]
	for w := range bucket {
		if e := bucket[w].Load(); e != nil && e.matches(doc, tag, x, sel) {
			return e.v, true
		}
	}
	e := &selEntry[V]{doc: weak.Make(doc), tag: tag, extra: x, sels: make([]uintptr, len(sel))}
	for i, s := range sel {
		e.sels[i] = selAddr(s)
	}
	e.v = compute()
	slot := &bucket[c.victim.Add(1)%selWays]
	for w := range bucket {
		if old := bucket[w].Load(); old == nil || old.doc.Value() == nil { // free, or its document is gone
			slot = &bucket[w]
			break
		}
	}
	slot.Store(e)
	return e.v, true
}

func (e *selEntry[V]) matches(doc *ast.QueryDocument, tag string, extra uintptr, sel ast.SelectionSet) bool {
	if e.tag != tag || e.extra != extra || len(e.sels) != len(sel) || e.doc.Value() != doc {
		return false
	}
	for i, s := range sel {
		if e.sels[i] != selAddr(s) {
			return false
		}
	}
	return true
}
