package admission

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
	"github.com/vektah/gqlparser/v2/validator"
)

// worstCases are documents built to make parsing and validation expensive
// while passing the default limits (15 levels, 1000 fields, 32768 bytes):
// each aims at one rule's or the walker's worst case.
func worstCases() map[string]string {
	var b strings.Builder
	build := func(f func()) string { b.Reset(); f(); return b.String() }
	return map[string]string{
		"introspectionQuery (GraphiQL's, for scale)": introspectionQuery,
		"1000 aliases": build(func() {
			b.WriteString("{")
			for i := range 1000 {
				fmt.Fprintf(&b, " a%d:__typename", i)
			}
			b.WriteString("}")
		}),
		// 32 fields share each response path (the limit): every pair of
		// the 32 payment fields is compared field by field, and half of
		// their 30 subfields conflict.
		"32 same-name fields at each path, conflicting": build(func() {
			b.WriteString("{")
			for i := range MaxSameResponseName {
				b.WriteString(` a:payment(id:"x"){`)
				for j := range 30 {
					leaf := "id"
					if (i+j)%2 == 0 {
						leaf = "status"
					}
					fmt.Fprintf(&b, " b%d:%s", j, leaf)
				}
				b.WriteString("}")
			}
			b.WriteString("}")
		}),
		// 100 fragments (the limit) spread together, 10 fields each, names
		// shared by many of them: the rule compares every pair.
		"100 fragments spread together": build(func() {
			b.WriteString("{")
			for i := range MaxFragments {
				fmt.Fprintf(&b, " ...F%d", i)
			}
			b.WriteString("}")
			for i := range MaxFragments {
				fmt.Fprintf(&b, " fragment F%d on Query{", i)
				for j := range 5 {
					fmt.Fprintf(&b, " n%d:payment(id:\"%d\"){id}", (i+j)%30, i%2)
				}
				b.WriteString("}")
			}
		}),
		// Two fragments each spreading 49 others: the rule compares the
		// two trees pairwise.
		"two trees of 49 fragments": build(func() {
			b.WriteString("{...X ...Y} fragment X on Query{")
			for i := range 49 {
				fmt.Fprintf(&b, " ...X%d", i)
			}
			b.WriteString("} fragment Y on Query{")
			for i := range 49 {
				fmt.Fprintf(&b, " ...Y%d", i)
			}
			b.WriteString("}")
			for i := range 49 {
				fmt.Fprintf(&b, " fragment X%d on Query{a%d:payment(id:\"x\"){id status}} fragment Y%d on Query{a%d:payment(id:\"y\"){id amount{paisa}}}", i, i, i, i)
			}
		}),
		// As many operations as the document work allows, each spreading
		// one fragment of 990 fields.
		"9 operations of 990 fields": build(func() {
			for i := range 9 {
				fmt.Fprintf(&b, "query Q%d{...F} ", i)
			}
			b.WriteString("fragment F on Query{")
			for i := range 990 {
				fmt.Fprintf(&b, " a%d:__typename", i)
			}
			b.WriteString("}")
		}),
		// Variables are looked up by a linear scan of the definitions.
		"1800 variables": build(func() {
			b.WriteString("query(")
			for i := range 1800 {
				fmt.Fprintf(&b, "$v%d:ID ", i)
			}
			b.WriteString("){nodes(ids:[")
			for i := range 1800 {
				fmt.Fprintf(&b, "$v%d ", i)
			}
			b.WriteString("]){id}}")
		}),
		"8000 literal ids": build(func() {
			b.WriteString(`{nodes(ids:[`)
			b.WriteString(strings.Repeat(`"a" `, 8000))
			b.WriteString(`]){id}}`)
		}),
		"1000 unknown fields": build(func() {
			b.WriteString("{")
			for i := range 1000 {
				fmt.Fprintf(&b, " a%d:paymnt", i)
			}
			b.WriteString("}")
		}),
	}
}

// BenchmarkValidateWorstCase measures what the gateway spends on a
// document that passes the limits before validation: parsing it and
// checking the limits, then gqlgen's own parse and validation (with the
// capped rules). The largest of these is the bounded cost of an accepted
// body; docs/design.md quotes it.
func BenchmarkValidateWorstCase(b *testing.B) {
	l := Limits{QueryLimits: QueryLimits{MaxDepth: 15, MaxFields: 1000, MaxQueryLength: 32768}, Cache: NewQueryCache(1 << 20)}
	for name, q := range worstCases() {
		b.Run(name, func(b *testing.B) {
			if len(q) > l.MaxQueryLength {
				b.Fatalf("%d bytes", len(q))
			}
			b.ReportAllocs()
			errs := 0
			defer reportCPU(b)()
			for b.Loop() {
				doc, err := parser.ParseQueryWithTokenLimit(&ast.Source{Input: q}, ParserTokenLimit)
				if err != nil {
					b.Fatal(err)
				}
				if err := l.check(doc); err != nil {
					b.Fatal(err)
				}
				doc, _ = parser.ParseQueryWithTokenLimit(&ast.Source{Input: q}, ParserTokenLimit)
				errs = len(validator.ValidateWithRules(testSchema, doc, CappedRules()))
			}
			b.ReportMetric(float64(errs), "errors")
		})
	}
}

// BenchmarkQueryCacheCost measures the heap a parsed and validated
// document holds against docCost's estimate of it, for shapes from the
// smallest query to the most node-dense (list values): heap/estimate must
// stay at most 1, so that QUERY_CACHE_BYTES bounds the cache's heap.
func BenchmarkQueryCacheCost(b *testing.B) {
	shapes := map[string]func(i int) string{
		"one payment": func(i int) string { return fmt.Sprintf(`{ payment(id: "pay_%d") { id status amount { amount } } }`, i) },
		"list with every field": func(i int) string {
			return fmt.Sprintf(`query Q%d { payments(first: 100) { edges { cursor node { id status amount { amount paisa currency } transactionId paymentMethod customer { name email phone address } createdAt updatedAt } } pageInfo { hasNextPage endCursor } } }`, i)
		},
		"995 short aliases": func(i int) string {
			return fmt.Sprintf("query Q%d {", i) + strings.Repeat("a:__typename ", 1) + func() string {
				var s strings.Builder
				for j := range 994 {
					fmt.Fprintf(&s, "a%d:__typename ", j)
				}
				return s.String()
			}() + "}"
		},
		"8000 literal ids": func(i int) string {
			return fmt.Sprintf("query Q%d {nodes(ids:[", i) + strings.Repeat(`"a" `, 8000) + "]){id}}"
		},
		"introspectionQuery": func(i int) string {
			return strings.Replace(introspectionQuery, "IntrospectionQuery", fmt.Sprintf("I%d", i), 1)
		},
	}
	for name, mk := range shapes {
		b.Run(name, func(b *testing.B) {
			const n = 50
			var ratio float64
			for b.Loop() {
				qs := make([]string, n)
				for i := range qs {
					qs[i] = mk(b.N*n + i)
				}
				docs := make([]*ast.QueryDocument, n)
				var est int64
				runtime.GC()
				var m0, m1 runtime.MemStats
				runtime.ReadMemStats(&m0)
				for i, q := range qs {
					docs[i] = validated(b, q)
					est += docCost(q, docs[i]) - int64(len(q)) // the text exists before parsing
				}
				runtime.GC()
				runtime.ReadMemStats(&m1)
				ratio = float64(m1.HeapAlloc-m0.HeapAlloc) / float64(est)
				runtime.KeepAlive(docs)
			}
			b.ReportMetric(ratio, "heap/estimate")
		})
	}
}
