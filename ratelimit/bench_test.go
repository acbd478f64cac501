package ratelimit

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkAllowLocal: one Allow on the in-memory budgets, 1,000 merchants,
// from every core at once (one mutex guards the map).
func BenchmarkAllowLocal(b *testing.B) {
	l, err := New(Config{RESTCallsPerSecond: 1e9, RESTBurst: 1e9, RequestsPerSecond: 1e9, RequestsBurst: 1e9})
	if err != nil {
		b.Fatal(err)
	}
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = fmt.Sprintf("%064x", i)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			l.Allow(ctx, keys[i%len(keys)], 101)
			i++
		}
	})
}

// BenchmarkAllowRedis: one Allow on a loopback redis-server (two EVALSHA
// round trips: requests, then REST calls).
func BenchmarkAllowRedis(b *testing.B) {
	srv := startRedis(b)
	c := client(b, srv.addr)
	l, err := New(Config{RESTCallsPerSecond: 1e9, RESTBurst: 1e9, RequestsPerSecond: 1e9, RequestsBurst: 1e9, Redis: c})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if d := l.Allow(ctx, "m", 101); d.Backend != BackendRedis {
			b.Fatalf("%+v", d)
		}
	}
}
