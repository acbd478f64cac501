package relay

import (
	"strings"
	"testing"

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
