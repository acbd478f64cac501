package apqstore

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// TestLocalBoundedByBytes: the local LRU keeps at most its bytes of
// queries, evicting the least recently used, whatever its count allows.
func TestLocalBoundedByBytes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const maxBytes = 1 << 20
	big := strings.Repeat("x", 32000)
	t.Run("1,000 queries of 32,000 bytes", func(t *testing.T) {
		l := NewLocal(1000, maxBytes)
		for i := range 1000 {
			l.Add(ctx, fmt.Sprintf("%064d", i), big)
		}
		t.Logf("after 1,000 adds of 32,000 bytes: %d queries, %d bytes kept (bound %d; by count alone: 1,000 queries, %d bytes)",
			l.Len(), l.Bytes(), maxBytes, 1000*(32000+64))
		if l.Bytes() > maxBytes || l.Len() != maxBytes/(32000+64) {
			t.Fatalf("%d queries, %d bytes", l.Len(), l.Bytes())
		}
		if _, ok := l.Get(ctx, fmt.Sprintf("%064d", 999)); !ok {
			t.Fatal("the newest query was evicted")
		}
		if _, ok := l.Get(ctx, fmt.Sprintf("%064d", 0)); ok {
			t.Fatal("the oldest query is still kept")
		}
	})
	t.Run("least recently used goes first", func(t *testing.T) {
		l := NewLocal(1000, 3*(32000+1))
		l.Add(ctx, "a", big)
		l.Add(ctx, "b", big)
		l.Add(ctx, "c", big)
		l.Get(ctx, "a")
		l.Add(ctx, "d", big)
		if _, ok := l.Get(ctx, "b"); ok {
			t.Fatal("b, least recently used, is still kept")
		}
		for _, k := range []string{"a", "c", "d"} {
			if _, ok := l.Get(ctx, k); !ok {
				t.Fatalf("%s was evicted", k)
			}
		}
	})
	t.Run("count bound", func(t *testing.T) {
		l := NewLocal(2, maxBytes)
		for _, k := range []string{"a", "b", "c"} {
			l.Add(ctx, k, "{ __typename }")
		}
		if l.Len() != 2 || l.Bytes() != 2*int64(1+len("{ __typename }")) {
			t.Fatalf("%d queries, %d bytes", l.Len(), l.Bytes())
		}
	})
	t.Run("a query larger than the bound is not kept", func(t *testing.T) {
		l := NewLocal(10, 1000)
		l.Add(ctx, "small", "{ __typename }")
		l.Add(ctx, "big", big)
		if _, ok := l.Get(ctx, "big"); ok || l.Len() != 1 {
			t.Fatalf("%d queries kept", l.Len())
		}
	})
	t.Run("re-adding a key replaces it", func(t *testing.T) {
		l := NewLocal(10, maxBytes)
		l.Add(ctx, "k", big)
		l.Add(ctx, "k", "{ __typename }")
		if l.Len() != 1 || l.Bytes() != int64(1+len("{ __typename }")) {
			t.Fatalf("%d queries, %d bytes", l.Len(), l.Bytes())
		}
	})
}
