package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"paygraph/restclient"
)

// fastREST is a REST API of a few payments whose texts hold what JSON
// must escape (quotes, control characters, invalid UTF-8), nulls, an
// amount past 2^53 paisa and statuses outside the schema's enum; a
// missing id is NOT_FOUND. It counts nothing: the tests compare two
// servers' bytes over the same calls.
type fastREST struct{ payments []restclient.Payment }

func ptr[T any](v T) *T { return &v }

func newFastREST(name, status string) *fastREST {
	at := time.Date(2026, 11, 24, 7, 30, 0, 123_000_000, time.UTC)
	return &fastREST{payments: []restclient.Payment{
		{ID: "pay_a", Status: "SUCCEEDED", Amount: 125050, Currency: "BDT", TransactionID: ptr("trx_1"), PaymentMethod: ptr("bkash"),
			Customer:  restclient.Customer{Name: ptr("Padma"), Email: ptr("p@example.com"), Phone: ptr("+8801"), Address: ptr("Dhaka"), City: ptr("Dhaka")},
			CreatedAt: at, UpdatedAt: at.Add(time.Hour)},
		{ID: "pay_b", Status: restclient.PaymentStatus(status), Amount: -7, Currency: "a\"b\\c\n\t\r\x01\x1f é 😀 \xff",
			Customer: restclient.Customer{Name: ptr(name), Email: ptr("")}, CreatedAt: at.In(time.FixedZone("x", 3600)), UpdatedAt: time.Time{}},
		{ID: "pay_c", Status: "ÉTAT\"", Amount: restclient.Paisa(1<<53 + 5), Currency: "", Customer: restclient.Customer{},
			CreatedAt: at, UpdatedAt: at},
	}}
}

func (f *fastREST) ListPayments(ctx context.Context, p restclient.ListParams) (*restclient.PaymentPage, error) {
	// pay_gone is only in the list: its detail (the address) is NOT_FOUND.
	page := &restclient.PaymentPage{Data: append(append([]restclient.Payment(nil), f.payments...),
		restclient.Payment{ID: "pay_gone", Status: "FAILED", Amount: 1, Currency: "BDT"})}
	for i := range page.Data {
		page.Data[i].Customer.Address = nil
	}
	return page, nil
}

func (f *fastREST) GetPayment(ctx context.Context, id string) (*restclient.Payment, error) {
	for _, p := range f.payments {
		if p.ID == id {
			p.Detailed = true
			return &p, nil
		}
	}
	return nil, &restclient.Error{Kind: restclient.KindNotFound, Status: 404, Message: "Payment not found"}
}

func (f *fastREST) GetPaymentLink(ctx context.Context, id string) (*restclient.PaymentLink, error) {
	return nil, &restclient.Error{Kind: restclient.KindNotFound, Status: 404, Message: "Payment link not found"}
}

func (f *fastREST) GetCheckoutSession(ctx context.Context, idOrRef string) (*restclient.CheckoutSession, error) {
	return nil, &restclient.Error{Kind: restclient.KindNotFound, Status: 404, Message: "Checkout session not found"}
}

// fastPair is the same server twice over rest: with the fast path, and
// with gqlgen's executor for every object.
type fastPair struct{ fast, slow http.Handler }

func newFastPair(t testing.TB, rest REST) fastPair {
	return fastPairConfig(t, RigConfig{REST: rest, Server: ServerConfig{MaxResponseBytes: -1}})
}

// fastPairConfig is the server cfg configures twice: with the fast path
// and without.
func fastPairConfig(t testing.TB, cfg RigConfig) fastPair {
	fast := NewRig(t, cfg)
	cfg.NoFastPath = true
	return fastPair{fast: fast.Handler, slow: NewRig(t, cfg).Handler}
}

func (p fastPair) post(h http.Handler, query string, vars map[string]any) []byte {
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req := httptest.NewRequest(http.MethodPost, "/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(restclient.HeaderAPIKey, "ak_test_x")
	req.Header.Set(restclient.HeaderAPISecret, "sk_test_y")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return append([]byte(rec.Result().Status+"\n"), rec.Body.Bytes()...)
}

// compare runs query on both servers (twice on the fast one: the second
// run takes its plans from the cache) and fails on any byte of difference.
func (p fastPair) compare(t testing.TB, query string, vars map[string]any) (slow []byte) {
	t.Helper()
	slow = p.post(p.slow, query, vars)
	for run := range 2 {
		fast := p.post(p.fast, query, vars)
		if validationFailed(fast) && validationFailed(slow) {
			// The executor never ran; gqlparser's "Did you mean" lists
			// equally close names in no fixed order.
			continue
		}
		if !bytes.Equal(fast, slow) && !bytes.Equal(errorsSorted(fast), errorsSorted(slow)) {
			t.Fatalf("query %q, run %d:\nfast path: %s\ngqlgen:    %s", query, run, fast, slow)
		}
	}
	return slow
}

// errorsSorted is answer with its errors in sorted order (each error's
// bytes as they are, the data as it is): gqlgen lists the errors of
// fields it resolves concurrently (two aliases of an address in one
// customer) in the order they finish, with the fast path or without.
func errorsSorted(answer []byte) []byte {
	status, body, _ := bytes.Cut(answer, []byte("\n"))
	var resp struct {
		Errors []json.RawMessage `json:"errors"`
		Data   json.RawMessage   `json:"data"`
	}
	if json.Unmarshal(body, &resp) != nil {
		return answer
	}
	slices.SortFunc(resp.Errors, func(a, b json.RawMessage) int { return bytes.Compare(a, b) })
	out := append(append([]byte(nil), status...), '\n')
	for _, e := range resp.Errors {
		out = append(append(out, e...), '\n')
	}
	return append(out, resp.Data...)
}

func validationFailed(answer []byte) bool {
	return bytes.HasPrefix(answer, []byte("422 ")) && bytes.Contains(answer, []byte(`"GRAPHQL_VALIDATION_FAILED"`))
}

// TestFastPathMatchesGqlgen: documents of every shape the fast path
// compiles (aliases, fragments, inline fragments with type conditions,
// __typename, literal @skip/@include, nulls, escapes, unsafe integers)
// and of shapes it leaves to gqlgen (resolver fields, variables in
// directives, errors with their paths and locations) answer the same
// bytes with and without it.
func TestFastPathMatchesGqlgen(t *testing.T) {
	rest := newFastREST("N\"a\\m\u2028e\x00\x7f", "weird status")
	p := newFastPair(t, rest)
	const all = `id status amount { amount paisa currency } transactionId paymentMethod customer { name email phone city } createdAt updatedAt`
	for _, tc := range []struct {
		name, query string
		vars        map[string]any
		wantFast    bool // the fast path serves at least one object of it
	}{
		{"list every plain field", `{ payments { nodes { ` + all + ` } } }`, nil, true},
		{"list edges", `{ payments(first: 3) { edges { cursor node { id __typename amount { __typename amount } } } pageInfo { hasNextPage } } }`, nil, true},
		{"edges with fragments and aliases", `{ payments(first: 4) { __typename edges { __typename c: cursor ...E node { ...P customer { email } } } } } fragment E on PaymentEdge { cursor node { id } } fragment P on Payment { status amount { currency } }`, nil, true},
		{"edges whose nodes select the address", `{ payments { edges { cursor node { id customer { address } } } } }`, nil, true},
		{"edges and nodes", `{ payments(first: 2) { edges { node { createdAt } } nodes { updatedAt } pageInfo { endCursor hasNextPage } } }`, nil, true},
		{"aliases", `{ payments { nodes { a: id b: id id: status amount { x: amount y: paisa } c: customer { n: name } } } }`, nil, true},
		{"one payment", `query P($id: ID!) { payment(id: $id) { ` + all + ` } }`, map[string]any{"id": "pay_b"}, true},
		{"aliases of payments", `{ a: payment(id: "pay_a") { id amount { amount currency } customer { name } } b: payment(id: "pay_b") { id } c: payment(id: "pay_c") { amount { paisa } } }`, nil, true},
		{"fragments", `{ payments { nodes { ...P ...P amount { ...M } } } } fragment P on Payment { id amount { amount } customer { ...C } } fragment M on Money { currency amount } fragment C on Customer { email }`, nil, true},
		{"merged fields", `{ payments { nodes { amount { amount } amount { currency } customer { name } ... on Payment { customer { email } amount { paisa } } } } }`, nil, true},
		{"inline fragments with type conditions", `{ nodes(ids: ["pay_a", "pay_b", "pl_x", "pay_zz"]) { __typename id ... on Payment { status amount { amount } } ... on PaymentLink { url } ... on Node { id } } }`, nil, true},
		{"node", `{ node(id: "pay_c") { ... on Payment { id status createdAt customer { __typename } } } }`, nil, true},
		{"literal skip and include", `{ payments { nodes { id @skip(if: true) status @include(if: false) amount @include(if: true) { amount @skip(if: false) } ... @skip(if: true) { createdAt } } } }`, nil, true},
		{"typename only", `{ payments { nodes { __typename } } }`, nil, true},
		{"variables in directives", `query V($s: Boolean!) { payments { nodes { id @skip(if: $s) amount { amount @include(if: $s) } } } }`, map[string]any{"s": true}, false},
		{"variables in directives, other value", `query V($s: Boolean!) { payments { nodes { id @skip(if: $s) amount { amount @include(if: $s) } } } }`, map[string]any{"s": false}, false},
		{"the address resolver, one item's failing", `{ payments { nodes { id customer { name address } } } }`, nil, true},
		{"the address alone", `{ payments { nodes { customer { address } } } }`, nil, true},
		{"the address twice, and a third customer", `{ payments { nodes { id a: customer { address } b: customer { address name } c: customer { city } } } }`, nil, true},
		{"the address three times", `{ payments { nodes { id a: customer { address } b: customer { address name } c: customer { address } } } }`, nil, true},
		{"two addresses in one customer", `{ payment(id: "pay_a") { customer { a: address name b: address } } payments { nodes { customer { phone x: address y: address } } } }`, nil, true},
		{"a customer merged from fragments, with the address", `{ payments { nodes { customer { name } ...F ... on Payment { customer { email } } ... @skip(if: true) { customer { phone } } customer @include(if: true) { city } } } } fragment F on Payment { id customer { address ...C } } fragment C on Customer { address name }`, nil, true},
		{"an address merged from fragments", `{ payment(id: "pay_b") { customer { address ...C ... on Customer { a: address } ... @include(if: false) { address } } } } fragment C on Customer { address name }`, nil, true},
		{"the address in a fragment", `{ payment(id: "pay_a") { ...P } } fragment P on Payment { id customer { ... on Customer { address } } }`, nil, true},
		{"address beside plain objects", `{ payment(id: "pay_a") { amount { amount } customer { address } } }`, nil, true},
		{"not found", `{ payment(id: "pay_zz") { id } a: payment(id: "pay_a") { id } }`, nil, true},
		{"introspection in an object", `{ payments { nodes { id __typename } } __type(name: "Payment") { name } }`, nil, true},
		{"invalid document", `{ payments { nodes { id nope } } }`, nil, false},
		{"deferred", `{ payments { nodes { id ... @defer { status } } } }`, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := fastCompiled.Load()
			p.compare(t, tc.query, tc.vars)
			if got := fastCompiled.Load() > before; got != tc.wantFast {
				t.Errorf("the fast path compiled a plan: %v, want %v", got, tc.wantFast)
			}
		})
	}
}

// FuzzFastPathMatchesGqlgen: any document, over records with any name
// and status, answers the same bytes with the fast path and without.
func FuzzFastPathMatchesGqlgen(f *testing.F) {
	for _, q := range []string{
		`{ payments { nodes { id status amount { amount paisa currency } transactionId paymentMethod customer { name email phone city } createdAt updatedAt } } }`,
		`{ payments { nodes { ...P a: id } } } fragment P on Payment { amount { amount } customer { name } }`,
		`{ nodes(ids: ["pay_a", "pl_x"]) { __typename ... on Payment { id customer { email } } } }`,
		`{ payment(id: "pay_b") { id @skip(if: true) amount @include(if: true) { currency } } }`,
		`{ payment(id: "pay_c") { customer { address name } } }`,
		`{ payments(first: 3) { edges { cursor node { id customer { name } } } pageInfo { endCursor } } }`,
	} {
		f.Add(q, "Padma \"Tea\"\n", "SUCCEEDED")
	}
	rest := &fastREST{}
	p := newFastPair(f, rest)
	f.Fuzz(func(t *testing.T, query, name, status string) {
		if len(query) > 4096 || strings.Count(query, "{") > 64 {
			t.Skip()
		}
		rest.payments = newFastREST(name, status).payments
		p.compare(t, query, nil)
	})
}

// TestFastPathPlansCached: the plans of a document are compiled by its
// first request only, 20 aliases' worth of them too (they share the
// cache's buckets without evicting each other).
func TestFastPathPlansCached(t *testing.T) {
	p := newFastPair(t, newFastREST("n", "SUCCEEDED"))
	var q strings.Builder
	q.WriteString("{")
	for i := range 20 {
		q.WriteString(" p" + string(rune('a'+i)) + `: payment(id: "pay_a") { id amount { amount } customer { name } }`)
	}
	q.WriteString(" }")
	before := fastCompiled.Load()
	p.compare(t, q.String(), nil)
	first := fastCompiled.Load() - before
	p.compare(t, q.String(), nil)
	if again := fastCompiled.Load() - before - first; first != 20 || again != 0 {
		t.Errorf("plans compiled: %d by the first request (want 20), %d by the next ones (want 0)", first, again)
	}
}

// TestFastTablesCoverThePage: the generated tables (fast_gen.go, graph/gen)
// hold every plain field of the objects a payments page is made of, so
// that a change of the generator that drops one (and sends every
// selection of it back to gqlgen, correct and slower, which the
// differential tests cannot see) fails here. Only Customer.address, a
// resolver, is not a plain field, but of a detail record (the root fast
// path's tables).
func TestFastTablesCoverThePage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		t      *fastType
		fields string
	}{
		{"Payment", fastPayment, "amount createdAt customer id paymentMethod status transactionId updatedAt"},
		{"Money", fastMoney, "amount currency paisa"},
		{"Customer", fastCustomer, "city email name phone"},
		{"PaymentEdge", fastPaymentEdge, "cursor node"},
		{"Payment of a detail record", fastPaymentDetail, "amount createdAt customer id paymentMethod status transactionId updatedAt"},
		{"Customer of a detail record", fastCustomerDetail, "address city email name phone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for name := range tc.t.ops {
				got = append(got, name)
			}
			slices.Sort(got)
			if strings.Join(got, " ") != tc.fields {
				t.Errorf("fields %q, want %q", strings.Join(got, " "), tc.fields)
			}
		})
	}
	if fastPaymentDetail.objectType[opPaymentCustomer] != fastCustomerDetail || fastPayment.objectType[opPaymentCustomer] != fastCustomer ||
		fastPaymentEdge.objectType[opPaymentEdgeNode] != fastPayment || fastPayment.objectType[opPaymentAmount] != fastMoney {
		t.Error("an object field's table is not its type's")
	}
}
