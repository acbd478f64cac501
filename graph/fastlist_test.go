package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2"

	"paygraph/restclient"
)

// callCountingREST counts the list calls and the detail calls it forwards.
type callCountingREST struct {
	*fastREST
	lists, details atomic.Int64
}

func (c *callCountingREST) ListPayments(ctx context.Context, p restclient.ListParams) (*restclient.PaymentPage, error) {
	c.lists.Add(1)
	return c.fastREST.ListPayments(ctx, p)
}

func (c *callCountingREST) GetPayment(ctx context.Context, id string) (*restclient.Payment, error) {
	c.details.Add(1)
	return c.fastREST.GetPayment(ctx, id)
}

// TestListFastPath: payments(...) root fields the root fast path answers
// (rootfast.go), and ones it leaves to gqlgen, errors and partial results
// included, answer the same bytes as gqlgen's executor alone, with the
// same REST calls (the resolver runs once, whoever writes the answer).
// The REST fake's page has pay_a, pay_b, pay_c, whose details hold their
// addresses, then pay_gone, whose detail is NOT_FOUND.
func TestListFastPath(t *testing.T) {
	rest := &callCountingREST{fastREST: newFastREST("N\"a\\m\u2028e", "weird status")}
	p := newFastPair(t, rest)
	const item = `id status amount { amount paisa currency } transactionId paymentMethod customer { name email phone city } createdAt updatedAt`
	// The end cursor of the first two payments, for after:.
	first := p.post(p.fast, `{ payments(first: 2) { pageInfo { endCursor } } }`, nil)
	m := regexp.MustCompile(`"endCursor":"([^"]+)"`).FindSubmatch(first)
	if m == nil {
		t.Fatalf("no end cursor in %s", first)
	}
	cursor := string(m[1])
	for _, tc := range []struct {
		name, query    string
		vars           map[string]any
		wantRoot       bool
		lists, details int64 // REST calls of one answer
	}{
		{"the bench's list20", `{ payments(first: 20) { nodes { id status amount { amount paisa currency } customer { name email } createdAt } pageInfo { hasNextPage endCursor } } }`, nil, true, 1, 0},
		{"the default first", `{ payments { nodes { id } } }`, nil, true, 1, 0},
		{"edges, nodes, page info, aliases, typenames", `{ p: payments(first: 3) { __typename e: edges { cursor c: cursor node { ` + item + ` __typename } __typename } nodes { ` + item + ` } pageInfo { __typename hasNextPage hasPreviousPage startCursor endCursor s: startCursor } t: __typename } }`, nil, true, 1, 0},
		{"fragments", `{ payments(first: 2) { ...C } } fragment C on PaymentConnection { nodes { ...P } edges { node { ... on Payment { id } } } } fragment P on Payment { id customer { name } }`, nil, true, 1, 0},
		{"literal skip and include", `{ payments(first: 2) { nodes { id status @skip(if: true) } pageInfo @include(if: false) { hasNextPage } edges @include(if: true) { cursor } } }`, nil, true, 1, 0},
		{"variables", `query L($n: Int, $s: PaymentStatus, $a: String) { payments(first: $n, status: $s, after: $a) { nodes { id } pageInfo { hasPreviousPage } } }`, map[string]any{"n": 2, "s": "SUCCEEDED"}, true, 1, 0},
		{"a null variable", `query L($n: Int) { payments(first: $n) { nodes { id } } }`, map[string]any{"n": nil}, true, 1, 0},
		{"a status", `{ payments(status: SUCCEEDED) { nodes { id } } }`, nil, true, 1, 0},
		{"a cursor", `{ payments(first: 1, after: "` + cursor + `") { edges { cursor node { id } } pageInfo { hasNextPage hasPreviousPage startCursor } } }`, nil, true, 1, 0},
		{"a cursor by variable", `query L($a: String) { payments(first: 5, after: $a) { nodes { id } } }`, map[string]any{"a": cursor}, true, 1, 0},
		{"first 0", `{ payments(first: 0) { edges { cursor } nodes { id } pageInfo { hasNextPage startCursor endCursor } } }`, nil, true, 1, 0},
		{"only the page info", `{ payments { pageInfo { hasNextPage } } }`, nil, true, 1, 0},
		{"only a typename", `{ payments { __typename } }`, nil, true, 1, 0},
		{"addresses, joined", `{ payments(first: 3) { nodes { customer { address } } } }`, nil, true, 1, 3},
		{"addresses in edges and nodes, aliased", `{ payments(first: 3) { edges { node { id customer { a: address address city } } } nodes { customer { ... on Customer { address } } } } }`, nil, true, 1, 3},
		{"an address whose detail fails", `{ payments(first: 4) { nodes { id customer { address } } } }`, nil, false, 1, 4},
		{"an address whose detail fails, with the page's cursors", `{ payments(first: 4) { nodes { customer { address } } pageInfo { startCursor endCursor hasNextPage } } }`, nil, false, 1, 4},
		{"an address whose detail fails, in edges", `{ payments(first: 4) { edges { cursor node { customer { name address } } } } }`, nil, false, 1, 4},
		{"first out of range", `{ payments(first: 101) { nodes { id } } }`, nil, false, 0, 0},
		{"first negative, by variable", `query L($n: Int) { payments(first: $n) { nodes { id } } }`, map[string]any{"n": -1}, false, 0, 0},
		{"a cursor not ours", `{ payments(after: "nope") { nodes { id } } }`, nil, false, 0, 0},
		{"a cursor of another filter", `{ payments(first: 1, after: "` + cursor + `", status: FAILED) { nodes { id } } }`, nil, false, 0, 0},
		{"a variable of the wrong type", `query L($n: Int) { payments(first: $n) { nodes { id } } }`, map[string]any{"n": "x"}, false, 0, 0},
		{"a directive on the root field", `{ payments @include(if: true) { nodes { id } } }`, nil, false, 1, 0},
		{"another root field", `{ payments { nodes { id } } payment(id: "pay_a") { id } }`, nil, false, 1, 1},
		{"two payments fields", `{ a: payments(first: 1) { nodes { id } } b: payments(first: 2) { nodes { id } } }`, nil, false, 2, 0},
		{"a variable skip", `query L($s: Boolean!) { payments(first: 2) { nodes { id status @skip(if: $s) } } }`, map[string]any{"s": true}, false, 1, 0},
		{"introspection inside", `{ payments(first: 1) { nodes { id } __schema { queryType { name } } } }`, nil, false, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lists, details := rest.lists.Load(), rest.details.Load()
			slow := p.post(p.slow, tc.query, tc.vars)
			slowLists, slowDetails := rest.lists.Load()-lists, rest.details.Load()-details
			before := rootAnswered.Load()
			lists, details = rest.lists.Load(), rest.details.Load()
			fast := p.compare(t, tc.query, tc.vars) // the slow server once more, the fast one twice
			if got := rootAnswered.Load() > before; got != tc.wantRoot {
				t.Errorf("the root fast path answered: %v, want %v\n%s", got, tc.wantRoot, fast)
			}
			if validationFailed(slow) {
				return
			}
			fastLists := (rest.lists.Load() - lists - slowLists) / 2
			fastDetails := (rest.details.Load() - details - slowDetails) / 2
			if slowLists != tc.lists || slowDetails != tc.details || fastLists != tc.lists || fastDetails != tc.details {
				t.Errorf("REST calls (lists, details): gqlgen %d, %d; fast path %d, %d; want %d, %d\n%s",
					slowLists, slowDetails, fastLists, fastDetails, tc.lists, tc.details, slow)
			}
		})
	}
}

// TestListFastPathDeferred: a deferred fragment anywhere in the
// connection's selection leaves the operation to gqlgen (which streams
// it; the POST transport of TestListFastPath cannot, and would leave its
// deferred parts running).
func TestListFastPathDeferred(t *testing.T) {
	t.Parallel()
	schema := NewExecutableSchema(Config{}).Schema()
	for _, q := range []string{
		`{ payments(first: 2) { nodes { id ... @defer { status } } } }`,
		`{ payments(first: 2) { nodes { id ... @defer { customer { address } } } } }`,
		`{ payments(first: 2) { ... @defer { pageInfo { hasNextPage } } } }`,
		`{ payments(first: 2) { edges { ... @defer { cursor } } } }`,
		`{ payments(first: 2) { pageInfo { ... @defer { endCursor } } } }`,
	} {
		doc, err := gqlparser.LoadQueryWithRules(schema, q, nil)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		oc := &graphql.OperationContext{Doc: doc, Operation: doc.Operations[0], RawQuery: q}
		if compileRoot(oc) != nil {
			t.Errorf("%s: planned by the root fast path, want gqlgen's", q)
		}
		// The same without @defer is planned (the refusal is the defer's).
		doc, _ = gqlparser.LoadQueryWithRules(schema, strings.ReplaceAll(q, "... @defer", "..."), nil)
		if compileRoot(&graphql.OperationContext{Doc: doc, Operation: doc.Operations[0]}) == nil {
			t.Errorf("%s without @defer: not planned", q)
		}
	}
}

// TestListFastPathChargesAsGqlgen: the list fast path charges the
// response budget what gqlgen's resolvers charge for the same query (the
// connection's cost plan, and each joined address as its resolver does).
func TestListFastPathChargesAsGqlgen(t *testing.T) {
	for _, q := range []string{
		`{ payments(first: 20) { nodes { id status amount { amount paisa currency } customer { name email } createdAt } pageInfo { hasNextPage endCursor } } }`,
		`{ payments(first: 3) { edges { cursor node { id customer { x: address address } } } nodes { customer { address } } } }`,
	} {
		fast, answered := chargedBy(t, false, q)
		slow, _ := chargedBy(t, true, q)
		if !answered || fast != slow || fast == 0 {
			t.Errorf("%s: charged %d by the root fast path (answered %v), %d by gqlgen", q, fast, answered, slow)
		}
	}
}

// TestListFastPathBudgetSpent: a response budget too small for the page
// answers the same with the fast path on and off (the resolver's error,
// or an address's).
func TestListFastPathBudgetSpent(t *testing.T) {
	t.Parallel()
	// From a budget the connection's own plan exceeds to one the page
	// fits, through ones where only the addresses (charged after it)
	// exceed it.
	for max := 300; max < 1000; max += 7 {
		p := fastPairConfig(t, RigConfig{REST: newFastREST("Padma", "SUCCEEDED"), Server: ServerConfig{MaxResponseBytes: int64(max)}})
		for i, q := range []string{
			`{ payments(first: 3) { nodes { id customer { name address } } } }`,
			`{ payments(first: 3) { edges { cursor node { id status createdAt updatedAt customer { address } } } } }`,
		} {
			t.Run(fmt.Sprintf("%d bytes, query %d", max, i), func(t *testing.T) {
				t.Parallel()
				p.compare(t, q, nil)
			})
		}
	}
}

// chargedBy answers query with the fast path on (noFast false) or off,
// and returns what its resolvers charged the response budget, and
// whether the root fast path answered.
func chargedBy(t *testing.T, noFast bool, query string) (charged int, answered bool) {
	t.Helper()
	probe := &estimateProbe{}
	r := NewRig(t, RigConfig{REST: newFastREST("Padma", "SUCCEEDED"), NoFastPath: noFast,
		Server: ServerConfig{Extensions: []graphql.HandlerExtension{probe}}})
	body, _ := json.Marshal(map[string]any{"query": query})
	req := httptest.NewRequest(http.MethodPost, "/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(restclient.HeaderAPIKey, "ak_test_x")
	req.Header.Set(restclient.HeaderAPISecret, "sk_test_y")
	before := rootAnswered.Load()
	r.Handler.ServeHTTP(httptest.NewRecorder(), req)
	return probe.charged, rootAnswered.Load() > before
}
