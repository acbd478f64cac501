package opscope_test

// What a look-up in the request's scope costs: the scope of one POST
// holds about a dozen values, and a single payment's walk and execution
// look up about 45 (hits, and misses that go on to net/http's context
// below the scope).

import (
	"context"
	"net/http"
	"testing"

	"paygraph/internal/opscope"
)

type (
	k0    struct{}
	k1    struct{}
	k2    struct{}
	k3    struct{}
	k4    struct{}
	k5    struct{}
	k6    struct{}
	k7    struct{}
	k8    struct{}
	k9    struct{}
	kA    struct{}
	kB    struct{}
	kMiss struct{}
)

// benchScope is a scope of twelve values over a context shaped as
// net/http's request context (two cancel layers, two values).
func benchScope(b *testing.B) context.Context {
	parent := context.WithValue(context.Background(), http.ServerContextKey, 1)
	parent = context.WithValue(parent, http.LocalAddrContextKey, 2)
	parent, cancelConn := context.WithCancel(parent)
	b.Cleanup(cancelConn)
	parent, cancelRequest := context.WithCancel(parent)
	b.Cleanup(cancelRequest)
	ctx := opscope.New(parent)
	for i, k := range []any{k0{}, k1{}, k2{}, k3{}, k4{}, k5{}, k6{}, k7{}, k8{}, k9{}, kA{}, kB{}} {
		opscope.WithValue(ctx, k, i)
	}
	opscope.Seal(ctx)
	return ctx
}

func BenchmarkScopeValue(b *testing.B) {
	ctx := benchScope(b)
	for _, tc := range []struct {
		name string
		key  any
	}{{"hit first", k0{}}, {"hit sixth", k5{}}, {"hit last", kB{}}, {"miss", kMiss{}}} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				_ = ctx.Value(tc.key)
			}
		})
	}
}
