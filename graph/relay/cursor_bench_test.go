package relay

import (
	"strings"
	"testing"

	"paygraph/internal/testenv"
	"paygraph/restclient"
)

// Cursor benchmarks: a list of n edges encodes n cursors only when the
// query asks for edges { cursor }; pageInfo asks for two. Decode runs once
// per `after`. Figures: BENCHMARKS.md.
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
	for _, bp := range benchPositions {
		b.Run(bp.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = bp.pos.Encode()
			}
		})
	}
}

func BenchmarkCursorDecode(b *testing.B) {
	for _, bp := range benchPositions {
		s := bp.pos.Encode()
		b.Run(bp.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Decode(s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestCursorAllocationBudget: at most 3 allocations to encode a cursor and
// 2 to decode one (BENCHMARKS.md).
func TestCursorAllocationBudget(t *testing.T) {
	if testenv.RaceEnabled() {
		t.Skip("the race detector changes allocation counts")
	}
	for _, bp := range benchPositions {
		s := bp.pos.Encode()
		if got := testing.AllocsPerRun(100, func() { _ = bp.pos.Encode() }); got > 3 {
			t.Errorf("%s: encode %.0f allocs/op, budget 3", bp.name, got)
		}
		if got := testing.AllocsPerRun(100, func() { _, _ = Decode(s) }); got > 2 {
			t.Errorf("%s: decode %.0f allocs/op, budget 2", bp.name, got)
		}
	}
}
