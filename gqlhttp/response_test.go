package gqlhttp

import (
	"bytes"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/99designs/gqlgen/graphql"

	"paygraph/graph/receipt"
)

// writeAnswer writes gqlgen's data as it is when json.Marshal would
// write the same bytes, and takes json.Marshal's path otherwise: the body
// is byte for byte what json.Marshal(resp) gives.
func TestWriteResponseSameAsMarshal(t *testing.T) {
	t.Parallel()
	for _, data := range []string{
		`{"payment":{"id":"pay_1","amount":{"amount":"12.50"}}}`,
		`{"payment":null}`,
		`{"a":"x<y & z>w"}`,
		`{"a":"line\u2028sep\u2029"}`,
		"{\"a\":\"bad \xff utf8\"}",
		`{"a":"esc \" \\ \n \u003c"}`,
		`{"a": "spaced"}`,
		`{"a":"ünïcödé ✓ 💳"}`,
		`[1,2,3]`,
	} {
		for _, ext := range []map[string]any{nil, {}, // gqlgen hands an empty map
			// A cost receipt: written by Receipt.AppendJSON, or with the
			// inspector's calls, by json.Marshal.
			{receipt.CostExtension: &receipt.Receipt{Estimated: 2, Made: 1, Saved: 1}},
			{receipt.CostExtension: &receipt.Receipt{Made: 1, Unmade: &receipt.Unmade{NotReached: 1}, Budget: &receipt.BudgetLeft{Remaining: 5, Limit: 6, ResetSeconds: 7}}},
			{receipt.CostExtension: &receipt.Receipt{Made: 1, Calls: []receipt.InspectCall{{}}}},
			{receipt.CostExtension: &receipt.Receipt{Made: 1}, "other": "<x>"},
			{"a-key <&>": &receipt.Receipt{Made: 1}},
			{receipt.CostExtension: (*receipt.Receipt)(nil)},
		} {
			resp := &graphql.Response{Data: json.RawMessage(data), Extensions: ext}
			want, err := json.Marshal(resp)
			if err != nil {
				want = []byte(`{"errors":[{"message":"internal error","extensions":{"code":"INTERNAL_SERVER_ERROR"}}]}`)
			}
			var got bytes.Buffer
			writeAnswer(&got, resp, 0, false)
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("data %q:\n got %s\nwant %s", data, got.Bytes(), want)
			}
		}
	}
}

// BenchmarkReceiptExtension: a single payment's extensions (its cost
// receipt) by json.Marshal's reflection, and by Receipt.AppendJSON
// (docs/perf-log/2026-11-benchmarks.md).
func BenchmarkReceiptExtension(b *testing.B) {
	ext := map[string]any{receipt.CostExtension: &receipt.Receipt{Estimated: 1, Made: 1,
		Unmade: &receipt.Unmade{}, Budget: &receipt.BudgetLeft{Remaining: 599, Limit: 600, ResetSeconds: 60}}}
	buf := make([]byte, 0, 512)
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			buf = append(buf[:0], marshalExtensions(ext)...)
		}
	})
	b.Run("AppendJSON", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			k, r := plainReceipt(ext)
			buf = append(append(buf[:0], k...), ':')
			buf, _ = r.AppendJSON(buf)
		}
	})
}

// lengthHeader: the value is the length's decimal text, a length asked
// again takes its cached value (no allocation), and two lengths of one
// slot each get their own.
func TestLengthHeader(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
	}{{"2049", 2049}, {"same slot as 2049", 2049 + 64}, {"a megabyte", 1 << 20}, {"2049 again", 2049}} {
		t.Run(tc.name, func(t *testing.T) {
			if got := lengthHeader(tc.n); len(got) != 1 || cap(got) != 1 || got[0] != strconv.Itoa(tc.n) {
				t.Fatalf("lengthHeader(%d) = %q (cap %d)", tc.n, got, cap(got))
			}
			if allocs := testing.AllocsPerRun(10, func() { _ = lengthHeader(tc.n) }); allocs != 0 {
				t.Errorf("lengthHeader(%d) again: %v allocations", tc.n, allocs)
			}
		})
	}
}
