package graph

import (
	"strings"
	"testing"

	"paygraph/internal/testenv"
)

// bomb is issue 11's validation-error bomb: n copies of one alias with
// different arguments, which gqlparser's overlapping-fields rule reports
// pairwise (n*(n-1)/2 errors).
func bomb(n int) string {
	return "{" + strings.Repeat(` a:node(id:"N"){id}`, n) + " }"
}

// BenchmarkValidationBomb serves issue 11's bomb (1,450 copies, 29 KB of
// query) through the handler: before, 20 s and a 252 MB answer.
func BenchmarkValidationBomb(b *testing.B) {
	r := NewRig(b, RigConfig{})
	q := bomb(1450)
	b.ReportAllocs()
	var a answer
	defer reportCPU(b)()
	for b.Loop() {
		a = r.post(b, q, nil)
	}
	b.ReportMetric(float64(len(a.body)), "body-bytes")
	b.ReportMetric(float64(len(a.Errors)), "errors")
}

// reportCPU reports the process's CPU time (user and system, GC included)
// per iteration, from when it is called to when the function it returns
// is: unlike ns/op, it does not grow when other processes share the
// machine's cores.
func reportCPU(b *testing.B) func() {
	start := testenv.ProcessCPU()
	return func() { b.ReportMetric(float64(testenv.ProcessCPU()-start)/float64(b.N), "cpu-ns/op") }
}
