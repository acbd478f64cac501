package graph

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"paygraph/graph/admission"
	"paygraph/graph/receipt"
	"slices"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"

	"paygraph/graph/customerdata"
	"paygraph/restclient"
	"paygraph/sessiontoken"
)

// tailProbe is an extension outside the tail (where metrics and tracing
// are): it records the response it is given and the receipts OnReceipt
// is told, so that the test compares what the outer extensions see, not
// only the bytes written.
type tailProbe struct{ seen *[]string }

func (tailProbe) ExtensionName() string                   { return "TailProbe" }
func (tailProbe) Validate(graphql.ExecutableSchema) error { return nil }
func (p tailProbe) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	resp := next(ctx)
	b, _ := json.Marshal(resp)
	*p.seen = append(*p.seen, string(b))
	return resp
}

// TestResponseTailMatchesChain: graphTail answers as the seven
// extensions it replaces did when registered one by one (the APQ
// registration's commit, cost receipts with the inspector, the response
// budget, the error cap, the live events, the customer-data note, the
// root fast path): the same bytes, the same response
// seen by an extension outside them and the same receipts, for answers
// that exercise each of them (a receipt, a dry run's plan, a response
// over its budget, more than admission.MaxErrors errors, masked and hidden
// customer data, a validation error, the root fast path and gqlgen's).
// And with gqlgen's Exec made when the root fast path needs it only
// (lazyQueries) as with it made at once.
func TestResponseTailMatchesChain(t *testing.T) {
	t.Parallel()
	aliases := func(n int, id string) string {
		var b strings.Builder
		b.WriteString("{")
		for i := range n {
			fmt.Fprintf(&b, " a%d: payment(id: %q) { id customer { name address } }", i, id)
		}
		return b.String() + " }"
	}
	queries := []struct {
		name, query string
		ext         map[string]any
	}{
		{"one payment", `{ payment(id: "pay_a") { id status amount { amount currency } customer { name email phone address city } } }`, nil},
		{"a list with addresses", `{ payments(first: 5) { nodes { id customer { name address } } pageInfo { hasNextPage } } }`, nil},
		{"a missing payment", `{ payment(id: "pay_nope") { id } }`, nil},
		{"more errors than the cap", aliases(admission.MaxErrors+5, "pay_nope"), nil},
		{"aliases of one payment", aliases(20, "pay_a"), nil},
		{"a dry run", `{ payment(id: "pay_a") { id customer { address } } }`, map[string]any{admission.DryRunExtension: true}},
		{"a validation error", `{ payment(id: "pay_a") { nope } }`, nil},
		{"a typename", `{ __typename }`, nil},
		{"a list whose address fails (the fast path leaves it to gqlgen)", `{ payments(first: 5) { nodes { id customer { address } } } }`, nil},
		{"an invalid id (left to gqlgen)", `{ a: payment(id: "pay_a") { id } b: payment(id: "nope") { id } }`, nil},
		// The APQ commit: a registration, then its hash alone (answered
		// only if the registration was stored).
		{"an APQ registration", apqTailQuery, map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": apqTailHash}}},
		{"the registered hash alone", "", map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": apqTailHash}}},
	}
	configs := []struct {
		name  string
		level sessiontoken.CustomerData
		max   int64
	}{
		{"full, no byte limit", sessiontoken.CustomerDataFull, -1},
		{"masked", sessiontoken.CustomerDataMasked, -1},
		{"none", sessiontoken.CustomerDataNone, -1},
		{"a 300-byte limit", sessiontoken.CustomerDataFull, 300},
	}
	rest := newFastREST("Nadia", "PENDING")
	for _, c := range configs {
		t.Run(c.name, func(t *testing.T) {
			type side struct {
				h    http.Handler
				seen []string
			}
			mk := func(chained func(*handler.Server, graphTail), eager bool) *side {
				s := &side{}
				cost := receipt.CostReceipts{Enabled: true, Inspector: true, OnReceipt: func(_ context.Context, r *receipt.Receipt) {
					b, _ := json.Marshal(r)
					s.seen = append(s.seen, "receipt "+string(b))
				}}
				inner := NewRig(t, RigConfig{REST: rest, Server: ServerConfig{chainedTail: chained, eagerExec: eager, MaxResponseBytes: c.max, Cost: cost,
					Extensions: []graphql.HandlerExtension{tailProbe{seen: &s.seen}}}}).Handler
				s.h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					inner.ServeHTTP(w, r.WithContext(customerdata.WithMax(r.Context(), c.level)))
				})
				return s
			}
			tail, eager, chain := mk(nil, false), mk(nil, true), mk(chainTail, false)
			for _, q := range queries {
				t.Run(q.name, func(t *testing.T) {
					body, _ := json.Marshal(map[string]any{"query": q.query, "extensions": q.ext})
					post := func(s *side) string {
						s.seen = s.seen[:0]
						req := httptest.NewRequest(http.MethodPost, "/graphql", bytes.NewReader(body))
						req.Header.Set("Content-Type", "application/json")
						req.Header.Set(restclient.HeaderAPIKey, "ak_test_x")
						req.Header.Set(restclient.HeaderAPISecret, "sk_test_y")
						rec := httptest.NewRecorder()
						s.h.ServeHTTP(rec, req)
						return rec.Result().Status + "\n" + rec.Body.String() + "\n" + strings.Join(s.seen, "\n")
					}
					want, got := post(chain), post(tail)
					if got != want && tailNormal(got) != tailNormal(want) {
						t.Fatalf("graphTail:\n%s\nthe seven extensions:\n%s", got, want)
					}
					// gqlgen's Exec made at once, as gqlgen does, and
					// only when needed (lazyQueries, opstate.go).
					if e := post(eager); got != e && tailNormal(got) != tailNormal(e) {
						t.Fatalf("Exec when needed:\n%s\nExec at once:\n%s", got, e)
					}
				})
			}
		})
	}
}

// The APQ registration of TestResponseTailMatchesChain.
const apqTailQuery = `{ payment(id: "pay_a") { id status } }`

var apqTailHash = func() string {
	sum := sha256.Sum256([]byte(apqTailQuery))
	return hex.EncodeToString(sum[:])
}()

// tailNormal is a post's answer with the lists whose order is that in
// which concurrent fields finished (errors, masked paths) sorted, in
// each JSON line, and the errors without their paths and locations.
func tailNormal(answer string) string {
	lines := strings.Split(answer, "\n")
	for i, l := range lines {
		l = strings.TrimPrefix(l, "receipt ")
		var v any
		if json.Unmarshal([]byte(l), &v) != nil {
			continue
		}
		b, _ := json.Marshal(sortConcurrentLists(v))
		lines[i] = string(b)
	}
	return strings.Join(lines, "\n")
}

func sortConcurrentLists(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = sortConcurrentLists(e)
			if l, ok := v[k].([]any); ok && (k == "errors" || k == "maskedPaths") {
				for _, e := range l {
					if m, ok := e.(map[string]any); ok && k == "errors" {
						// Which of more than admission.MaxErrors errors are kept is
						// the order they came in: their messages and codes
						// are compared, and how many.
						delete(m, "path")
						delete(m, "locations")
					}
				}
				slices.SortFunc(l, func(a, b any) int {
					x, _ := json.Marshal(a)
					y, _ := json.Marshal(b)
					return bytes.Compare(x, y)
				})
			}
		}
	case []any:
		for i, e := range v {
			v[i] = sortConcurrentLists(e)
		}
	}
	return v
}
