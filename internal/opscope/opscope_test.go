package opscope_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"paygraph/internal/opscope"
)

type keyA struct{}
type keyB struct{}

// TestScope: an open scope takes values without a new context, a later
// value of a key replaces the earlier, a sealed one (or none) adds a
// context layer as context.WithValue does, and a deadline put under the
// open scope ends it.
func TestScope(t *testing.T) {
	t.Parallel()
	t.Run("open scope holds values", func(t *testing.T) {
		ctx := opscope.New(context.Background())
		if got := opscope.WithValue(ctx, keyA{}, 1); got != ctx {
			t.Fatal("an open scope's value made a new context")
		}
		opscope.WithValue(ctx, keyA{}, 2)
		for i := range 20 { // past the fixed entries
			opscope.WithValue(ctx, i, i)
		}
		if v := ctx.Value(keyA{}); v != 2 {
			t.Fatalf("keyA = %v, want 2", v)
		}
		if v := ctx.Value(19); v != 19 {
			t.Fatalf("19 = %v, want 19", v)
		}
		if v := ctx.Value(keyB{}); v != nil {
			t.Fatalf("keyB = %v, want nil", v)
		}
	})
	t.Run("misses go on to the parent", func(t *testing.T) {
		type intKey int
		parent := context.WithValue(context.WithValue(context.Background(), keyB{}, "parent's b"), intKey(2), "parent's 2")
		ctx := opscope.New(parent)
		opscope.WithValue(ctx, keyA{}, "a")
		opscope.WithValue(ctx, intKey(1), "1")
		for _, tc := range []struct {
			key  any
			want any
		}{
			{keyA{}, "a"}, {intKey(1), "1"},
			{keyB{}, "parent's b"},    // a type the scope holds none of
			{intKey(2), "parent's 2"}, // a type it holds, another value
			{intKey(3), nil}, {"x", nil}, {nil, nil},
		} {
			if got := ctx.Value(tc.key); got != tc.want {
				t.Errorf("%#v: %v, want %v", tc.key, got, tc.want)
			}
		}
	})
	t.Run("sealed scope adds layers", func(t *testing.T) {
		ctx := opscope.New(context.Background())
		opscope.WithValue(ctx, keyA{}, 1)
		opscope.Seal(ctx)
		op := opscope.WithValue(ctx, keyA{}, 2)
		if op == ctx || ctx.Value(keyA{}) != 1 || op.Value(keyA{}) != 2 {
			t.Fatalf("sealed: the scope holds %v, the derived context %v", ctx.Value(keyA{}), op.Value(keyA{}))
		}
		// A new scope per operation over the sealed one.
		op2 := opscope.New(ctx)
		opscope.WithValue(op2, keyA{}, 3)
		if ctx.Value(keyA{}) != 1 || op2.Value(keyA{}) != 3 {
			t.Fatal("an operation's scope changed its connection's")
		}
	})
	t.Run("no scope", func(t *testing.T) {
		ctx := context.Background()
		if got := opscope.WithValue(ctx, keyA{}, 1); got == ctx || got.Value(keyA{}) != 1 {
			t.Fatal("without a scope WithValue must be context.WithValue")
		}
	})
	t.Run("deadline under the scope", func(t *testing.T) {
		ctx := opscope.New(context.Background())
		got, cancel := opscope.WithTimeout(ctx, 10*time.Millisecond)
		defer cancel()
		if got != ctx {
			t.Fatal("the deadline made a new context")
		}
		if _, ok := ctx.Deadline(); !ok {
			t.Fatal("the scope has no deadline")
		}
		child, stop := context.WithCancel(ctx)
		defer stop()
		<-child.Done()
		if ctx.Err() != context.DeadlineExceeded || child.Err() != context.DeadlineExceeded {
			t.Fatalf("errors %v, %v; want the deadline's", ctx.Err(), child.Err())
		}
	})
	t.Run("request copied only for a new context", func(t *testing.T) {
		r := httptest.NewRequest("GET", "/", nil)
		ctx := opscope.New(r.Context())
		r = r.WithContext(ctx)
		if opscope.Request(r, opscope.WithValue(ctx, keyA{}, 1)) != r {
			t.Fatal("the request was copied for a value its scope holds")
		}
		opscope.Seal(ctx)
		if opscope.Request(r, opscope.WithValue(ctx, keyA{}, 2)) == r {
			t.Fatal("a new context needs a new request")
		}
	})
}

// TestUnder: a scope put below a new parent keeps its own values, reads
// the new parent's (which holds the old one's), and ends with it; a
// deadline set after is put under it too.
func TestUnder(t *testing.T) {
	t.Parallel()
	conn := context.WithValue(context.Background(), keyB{}, "connection")
	ctx := opscope.New(conn)
	opscope.WithValue(ctx, keyA{}, "operation")
	type opKey struct{}
	parent, cancel := context.WithCancel(context.WithValue(conn, opKey{}, "started"))
	if got := opscope.Under(ctx, parent); got != ctx {
		t.Fatal("Under made a new context")
	}
	for _, tc := range []struct {
		name string
		key  any
		want any
	}{
		{"its own value", keyA{}, "operation"},
		{"the old parent's value", keyB{}, "connection"},
		{"the new parent's value", opKey{}, "started"},
	} {
		if v := ctx.Value(tc.key); v != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, v, tc.want)
		}
	}
	ctx, stop := opscope.WithTimeout(ctx, time.Hour)
	defer stop()
	if _, ok := ctx.Deadline(); !ok {
		t.Error("no deadline after WithTimeout")
	}
	if ctx.Err() != nil {
		t.Fatal("ended before its new parent")
	}
	cancel()
	if ctx.Err() == nil {
		t.Error("still open after its new parent ended")
	}
	if opscope.Seal(ctx); opscope.Under(ctx, context.Background()).Err() == nil {
		t.Error("Under moved a sealed scope")
	}
}
