package gqlhttp

import (
	"net/http"
	"testing"
)

// TestVaryUsualLinesShared: the Vary lines of the usual answers (with and
// without Compress's line, an actual request and one with rs/cors's line
// to come) cost no allocation, and every shared value is full to its
// capacity, so that a middleware appending to one copies it rather than
// changing every other answer's.
func TestVaryUsualLinesShared(t *testing.T) {
	h := http.Header{}
	// A browser's lines once rs/cors has added its own (it copies).
	browser := [][]string{{varyOnCallersButOrigin[0], "Origin"}, {varyAcceptEncoding[0], varyOnCallersButOrigin[0], "Origin"}}
	n := testing.AllocsPerRun(100, func() {
		for _, compressed := range []bool{false, true} {
			delete(h, "Vary")
			if compressed {
				addVaryAcceptEncoding(h)
			}
			h["Vary"] = varyThenCallers(h["Vary"])
			_ = VaryWithoutOrigin(h["Vary"])
			_ = VaryOneLine(browser[0])
			_ = VaryOneLine(browser[1])
			h["Vary"] = VaryOriginLast(h["Vary"])
		}
	})
	if n != 0 {
		t.Errorf("%v allocations for the usual Vary lines", n)
	}
	for i, v := range [][]string{cacheControlNoStore, varyAcceptEncoding, varyOnCallers, varyOnCallersButOrigin,
		varyEncodingOnCallers, varyEncodingOnCallersButOrigin, varyOnCallersOriginLast, varyEncodingOnCallersOriginLast} {
		if cap(v) != len(v) {
			t.Errorf("shared value %d %q has spare capacity %d", i, v, cap(v)-len(v))
		}
	}
}
