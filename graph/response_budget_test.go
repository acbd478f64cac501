package graph_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"paygraph/graph/budget"
	"paygraph/graph/errcode"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"paygraph/graph"
	"paygraph/sandbox"
)

// bigRecordsREST is a REST API whose payments are valid but large: each
// customer field holds fieldLen bytes, so a record's body is about
// 4*fieldLen (under the 64 KiB that a single record may be). It counts
// the calls it gets.
type bigRecordsREST struct {
	fieldLen int
	calls    atomic.Int64
}

func bigPaymentID(i int) string { return fmt.Sprintf("pay_prod_%032x", i) }

func (s *bigRecordsREST) payment(id string, detailed bool) map[string]any {
	customer := map[string]any{
		"name":  strings.Repeat("n", s.fieldLen),
		"email": strings.Repeat("e", s.fieldLen) + "@example.com",
		"phone": strings.Repeat("1", s.fieldLen),
	}
	if detailed {
		customer["address"] = strings.Repeat("a", s.fieldLen)
	}
	return map[string]any{
		"id": id, "status": "SUCCEEDED", "amount": json.Number("1250.50"), "currency": "BDT",
		"transaction_id": "TX" + id[9:19], "payment_method": "bkash", "customer": customer,
		"created_at": "2026-11-21T09:30:00.000Z", "updated_at": "2026-11-21T09:31:00.000Z",
	}
}

func (s *bigRecordsREST) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.calls.Add(1)
	w.Header().Set("Content-Type", "application/json")
	if id, ok := strings.CutPrefix(r.URL.Path, "/api/v1/payments/"); ok {
		_ = json.NewEncoder(w).Encode(s.payment(id, true))
		return
	}
	page := make([]map[string]any, 100)
	for i := range page {
		page[i] = s.payment(bigPaymentID(i), false)
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"data": page, "has_more": true, "next_cursor": "next"})
}

// TestResponseBudget: a request whose response would pass
// MAX_RESPONSE_BYTES fails with RESPONSE_TOO_LARGE before the response is
// built (the heap it takes is that of the REST records, not of the 49
// copies the query asks for), while documented queries pass.
func TestResponseBudget(t *testing.T) {
	sb := sandbox.New(sandbox.Options{})
	biz := sb.Businesses()[0]
	newHandler := func(t *testing.T, rest http.Handler, maxResponse int64) http.Handler {
		// Complexity is left out of the way: the budget must hold whatever
		// query the complexity limit lets through.
		h, _ := serveGraphQL(t, graph.RigConfig{RESTHandler: rest, OverHTTP: true,
			Server: graph.ServerConfig{MaxResponseBytes: maxResponse, MaxComplexity: 1 << 30}})
		return h
	}

	t.Run("49 aliases of nodes(100 ids) of 60 KB records", func(t *testing.T) {
		rest := &bigRecordsREST{fieldLen: 15_000}
		h := newHandler(t, rest, budget.DefaultMaxResponseBytes)
		ids := make([]string, 100)
		for i := range ids {
			ids[i] = bigPaymentID(i)
		}
		// The ids as a variable: 49 copies of 100 literal ids would be a
		// query over MAX_QUERY_LENGTH.
		var q strings.Builder
		q.WriteString("query($ids: [ID!]!) {")
		for i := range 49 {
			fmt.Fprintf(&q, " a%d: nodes(ids: $ids) { id ... on Payment { status customer { name email phone } } }", i)
		}
		q.WriteString(" }")
		// Uncapped, this answer would be 49 x 100 x 45 KB = 220 MB.
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		ans, size := gqlPost(t, h, biz, q.String(), map[string]any{"ids": ids})
		runtime.ReadMemStats(&after)
		allocated := after.TotalAlloc - before.TotalAlloc
		heapGrowth := int64(after.HeapAlloc) - int64(before.HeapAlloc)
		t.Logf("answer %d bytes; %d REST calls; allocated %.1f MiB during the request, heap %+.1f MiB after it",
			size, rest.calls.Load(), float64(allocated)/(1<<20), float64(heapGrowth)/(1<<20))
		if codes := ans.codes(); len(codes) != 1 || codes[0] != errcode.ResponseTooLarge || string(ans.Data) != "null" {
			t.Errorf("data %.100s, errors %+v; want one RESPONSE_TOO_LARGE and no data", ans.Data, ans.Errors)
		}
		if n := rest.calls.Load(); n > 100 {
			t.Errorf("%d REST calls for 100 distinct ids", n)
		}
		// The 100 records (6 MB of bodies, decoded once) and one alias's
		// worth of estimate: a few times 6 MB, never the 220 MB answer.
		if allocated > 64<<20 {
			t.Errorf("allocated %d MiB for a refused request, want under 64 MiB", allocated>>20)
		}
	})

	t.Run("an ordinary 100-item list with every field passes", func(t *testing.T) {
		h := newHandler(t, sb, budget.DefaultMaxResponseBytes)
		const q = `{ payments(first: 100) { edges { cursor node { id status amount { amount paisa currency } transactionId paymentMethod
			customer { name email phone address city } createdAt updatedAt } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }`
		ans, size := gqlPost(t, h, biz, q, nil)
		if len(ans.Errors) > 0 {
			t.Fatalf("errors %+v", ans.Errors)
		}
		t.Logf("a 100-item list with every field: %d bytes (limit %d)", size, budget.DefaultMaxResponseBytes)
	})

	t.Run("the same list over a small limit", func(t *testing.T) {
		h := newHandler(t, sb, 8<<10)
		sb.ResetCalls()
		ans, _ := gqlPost(t, h, biz, `{ a: payments(first: 100) { nodes { id customer { name email } } } b: payment(id: "`+sb.Payments(biz.APIKey)[0].ID+`") { id } }`, nil)
		if codes := ans.codes(); len(codes) != 1 || codes[0] != errcode.ResponseTooLarge {
			t.Errorf("errors %+v, want one RESPONSE_TOO_LARGE", ans.Errors)
		}
	})

	t.Run("aliases of a plain field are counted", func(t *testing.T) {
		// No resolver runs for customer { name }: the payment's plan
		// counts each alias. 300 aliases of a 15 KB name is 4.5 MB.
		rest := &bigRecordsREST{fieldLen: 15_000}
		h := newHandler(t, rest, 1<<20)
		var q strings.Builder
		fmt.Fprintf(&q, `{ payment(id: "%s") { customer {`, bigPaymentID(1))
		for i := range 300 {
			fmt.Fprintf(&q, " n%d: name", i)
		}
		q.WriteString(" } } }")
		ans, size := gqlPost(t, h, biz, q.String(), nil)
		if codes := ans.codes(); len(codes) != 1 || codes[0] != errcode.ResponseTooLarge || size > 1<<10 {
			t.Errorf("%d bytes, errors %+v; want one RESPONSE_TOO_LARGE", size, ans.Errors)
		}
	})

	t.Run("a list over the budget makes none of its address calls", func(t *testing.T) {
		// Each list item's customer.address would be a REST call of its
		// own; the list is refused before any of them is made.
		rest := &bigRecordsREST{fieldLen: 2_000}
		h := newHandler(t, rest, 100<<10)
		ans, _ := gqlPost(t, h, biz, `{ payments(first: 100) { nodes { customer { name address } } } }`, nil)
		if codes := ans.codes(); len(codes) != 1 || codes[0] != errcode.ResponseTooLarge {
			t.Errorf("errors %+v, want one RESPONSE_TOO_LARGE", ans.Errors)
		}
		if n := rest.calls.Load(); n != 1 {
			t.Errorf("%d REST calls, want the list's alone", n)
		}
	})
}
