package trusteddocs

import (
	"strings"
	"testing"
)

// BenchmarkDecide: the cost enforce adds to a request, by what it sends.
func BenchmarkDecide(b *testing.B) {
	listed := "query Big { payments(first: 100) { nodes { id " + strings.Repeat("status amount { amount paisa currency } ", 50) + "} } }" // ~2 KiB
	path := b.TempDir() + "/m.json"
	s := &Store{mode: Enforce, path: path}
	m := &manifest{byID: map[string]string{}, byHash: map[string]string{}}
	if err := m.add("big", listed); err != nil {
		b.Fatal(err)
	}
	s.cur.Store(m)
	for _, bc := range []struct {
		name string
		req  Request
	}{
		{"documentId", Request{DocumentID: "big"}},
		{"apq-hash", Request{SHA256Hash: hashOf(listed)}},
		{"full-text-2KiB", Request{Query: listed}},
		{"introspection", Request{Query: introspectionQuery}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s.introspection = true
			b.ReportAllocs()
			for b.Loop() {
				if d := s.Decide(bc.req); d.Action == Refuse {
					b.Fatalf("%+v", d)
				}
			}
		})
	}
}
