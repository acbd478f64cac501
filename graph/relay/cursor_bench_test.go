package relay

import (
	"strings"
	"testing"

	"paygraph/internal/testenv"
	"paygraph/restclient"
)

// Cursor benchmarks: a list of n edges encodes n cursors only when the
// query asks for edges { cursor }; pageInfo asks for two. Decode runs once
// per `after`. A payments field derives its merchant's signer once
// (BenchmarkCursorSigner: the first Encode pays for the MAC key).
// Figures: docs/perf-log/2026-11-benchmarks.md.
//
//	go test -run '^$' -bench Cursor -benchmem ./graph/relay

var benchPositions = []struct {
	name string
	pos  Position
}{
	{"first-page", Position{Skip: 7}},
	{"rest-cursor", Position{RestCursor: "cGF5X3Byb2RfMDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY", Skip: 42, Status: restclient.StatusSucceeded}},
	{"long-rest-cursor", Position{RestCursor: strings.Repeat("x", 512), Skip: 99}},
}

func BenchmarkCursorEncode(b *testing.B) {
	s := testSigner(b)
	for _, bp := range benchPositions {
		b.Run(bp.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = s.Encode(bp.pos)
			}
		})
	}
}

// BenchmarkCursorSigner: what a payments field pays once for its
// merchant's signer, with its first cursor.
func BenchmarkCursorSigner(b *testing.B) {
	k := mustKeys(b, testKeyA)
	pos := benchPositions[1].pos
	b.ReportAllocs()
	for b.Loop() {
		_ = k.For("ak_test_merchant", "sk_test_secret").Encode(pos)
	}
}

func BenchmarkCursorDecode(b *testing.B) {
	s := testSigner(b)
	for _, bp := range benchPositions {
		c := s.Encode(bp.pos)
		b.Run(bp.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Decode(c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestCursorAllocationBudget: at most 3 allocations to encode a cursor and
// 2 to decode one (docs/perf-log/2026-11-benchmarks.md), once the signer holds its MAC state.
func TestCursorAllocationBudget(t *testing.T) {
	if testenv.RaceEnabled() {
		t.Skip("the race detector changes allocation counts")
	}
	s := testSigner(t)
	for _, bp := range benchPositions {
		c := s.Encode(bp.pos)
		if got := testing.AllocsPerRun(100, func() { _ = s.Encode(bp.pos) }); got > 3 {
			t.Errorf("%s: encode %.0f allocs/op, budget 3", bp.name, got)
		}
		if got := testing.AllocsPerRun(100, func() { _, _ = s.Decode(c) }); got > 2 {
			t.Errorf("%s: decode %.0f allocs/op, budget 2", bp.name, got)
		}
	}
}
