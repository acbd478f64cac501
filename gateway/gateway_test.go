package gateway_test

import (
	"paygraph/gateway"

	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"paygraph/sandbox"
)

type paymentNode struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Amount struct {
		Amount   string `json:"amount"`
		Paisa    int64  `json:"paisa"`
		Currency string `json:"currency"`
	} `json:"amount"`
	TransactionID *string `json:"transactionId"`
	PaymentMethod *string `json:"paymentMethod"`
	Customer      struct {
		Name    *string `json:"name"`
		Email   *string `json:"email"`
		Phone   *string `json:"phone"`
		Address *string `json:"address"`
		City    *string `json:"city"`
	} `json:"customer"`
	CreatedAt string `json:"createdAt"`
	UpdatedAt string `json:"updatedAt"`
}

const paymentFields = `id status amount { amount paisa currency } transactionId paymentMethod
	customer { name email phone address city } createdAt updatedAt`

type connection struct {
	Edges []struct {
		Cursor string      `json:"cursor"`
		Node   paymentNode `json:"node"`
	} `json:"edges"`
	Nodes    []paymentNode `json:"nodes"`
	PageInfo struct {
		HasNextPage     bool    `json:"hasNextPage"`
		HasPreviousPage bool    `json:"hasPreviousPage"`
		StartCursor     *string `json:"startCursor"`
		EndCursor       *string `json:"endCursor"`
	} `json:"pageInfo"`
}

func taka(paisa int64) string {
	sign := ""
	if paisa < 0 {
		sign, paisa = "-", -paisa
	}
	return fmt.Sprintf("%s%d.%02d", sign, paisa/100, paisa%100)
}

// orEmpty is *p, or "" for nil.
func orEmpty(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func str(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

// wantPayment compares a GraphQL payment with the sandbox's record.
func wantPayment(t *testing.T, got paymentNode, want sandbox.Payment, withAddress bool) {
	t.Helper()
	check := func(field, got, want string) {
		t.Helper()
		if got != want {
			t.Errorf("payment %s: %s = %q, want %q", want, field, got, want)
		}
	}
	check("id", got.ID, want.ID)
	check("status", got.Status, want.Status)
	check("amount.amount", got.Amount.Amount, taka(want.AmountPaisa))
	check("amount.paisa", fmt.Sprint(got.Amount.Paisa), fmt.Sprint(want.AmountPaisa))
	check("amount.currency", got.Amount.Currency, want.Currency)
	check("paymentMethod", str(got.PaymentMethod), want.PaymentMethod)
	wantTx := "<nil>"
	if want.TransactionID != "" {
		wantTx = want.TransactionID
	}
	check("transactionId", str(got.TransactionID), wantTx)
	check("customer.name", str(got.Customer.Name), want.Customer.Name)
	check("customer.email", str(got.Customer.Email), want.Customer.Email)
	check("customer.phone", str(got.Customer.Phone), want.Customer.Phone)
	if withAddress {
		check("customer.address", str(got.Customer.Address), want.Customer.Address)
	}
	check("customer.city", str(got.Customer.City), "<nil>")
	check("createdAt", got.CreatedAt, want.CreatedAt)
	check("updatedAt", got.UpdatedAt, want.UpdatedAt)
}

func TestReadmeExampleQuery(t *testing.T) {
	t.Parallel()
	g := startGateway(t, setup{})
	r := g.Post(t, creds(g.Biz[0]), gateway.ExampleQuery, nil)
	r.WantNoErrors(t)
	var data struct{ Payments connection }
	r.Decode(t, &data)
	want := g.Sandbox.Payments(g.Biz[0].APIKey)[:3]
	if len(data.Payments.Edges) != 3 {
		t.Fatalf("got %d edges, want 3", len(data.Payments.Edges))
	}
	type edgeView struct{ ID, Amount, Address string }
	for i, e := range data.Payments.Edges {
		if want[i].Customer.Address == "" {
			t.Fatalf("sandbox payment %s has no address: the example shows one", want[i].ID)
		}
		wantEdge := edgeView{want[i].ID, taka(want[i].AmountPaisa), want[i].Customer.Address}
		if diff := cmp.Diff(wantEdge, edgeView{e.Node.ID, e.Node.Amount.Amount, str(e.Node.Customer.Address)}); diff != "" || e.Node.Amount.Paisa != want[i].AmountPaisa {
			t.Errorf("edge %d (-want +got):\n%s paisa %d, want %d", i, diff, e.Node.Amount.Paisa, want[i].AmountPaisa)
		}
		if e.Cursor == "" {
			t.Errorf("edge %d has no cursor", i)
		}
	}
	if !data.Payments.PageInfo.HasNextPage || data.Payments.PageInfo.EndCursor == nil {
		t.Errorf("pageInfo = %+v, want a next page", data.Payments.PageInfo)
	}
}

func TestPaymentsFieldsMatchREST(t *testing.T) {
	t.Parallel()
	g := startGateway(t, setup{})
	for _, b := range g.Biz {
		r := g.Post(t, creds(b), `{ payments(first: 100) { nodes { `+paymentFields+` } } }`, nil)
		r.WantNoErrors(t)
		var data struct{ Payments connection }
		r.Decode(t, &data)
		want := g.Sandbox.Payments(b.APIKey)
		for i, got := range data.Payments.Nodes {
			wantPayment(t, got, want[i], true)
		}
	}
}

// walk pages through the whole list with the given page size.
func walk(t *testing.T, g *testGateway, b sandbox.Business, first int, status string) []string {
	t.Helper()
	var ids []string
	after := ""
	for calls := 0; ; calls++ {
		if calls > 1000 {
			t.Fatal("walk does not end")
		}
		vars := map[string]any{"first": first}
		if after != "" {
			vars["after"] = after
		}
		if status != "" {
			vars["status"] = status
		}
		r := g.Post(t, creds(b), `query($first: Int, $after: String, $status: PaymentStatus) {
			payments(first: $first, after: $after, status: $status) {
				edges { cursor node { id status } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }`, vars)
		r.WantNoErrors(t)
		var data struct{ Payments connection }
		r.Decode(t, &data)
		c := data.Payments
		if c.PageInfo.HasPreviousPage != (after != "") {
			t.Fatalf("hasPreviousPage = %v with after %q", c.PageInfo.HasPreviousPage, after)
		}
		if len(c.Edges) > first {
			t.Fatalf("got %d edges for first %d", len(c.Edges), first)
		}
		for _, e := range c.Edges {
			if status != "" && e.Node.Status != status {
				t.Fatalf("filter %s returned a %s payment", status, e.Node.Status)
			}
			ids = append(ids, e.Node.ID)
		}
		if len(c.Edges) > 0 && (str(c.PageInfo.EndCursor) != c.Edges[len(c.Edges)-1].Cursor || str(c.PageInfo.StartCursor) != c.Edges[0].Cursor) {
			t.Fatalf("start/end cursors %+v do not match the edges", c.PageInfo)
		}
		if !c.PageInfo.HasNextPage {
			return ids
		}
		if len(c.Edges) < first {
			t.Fatalf("short page (%d of %d) claims a next page", len(c.Edges), first)
		}
		after = *c.PageInfo.EndCursor
	}
}

func wantIDs(b sandbox.Business, sb *sandbox.Server, status string) []string {
	var ids []string
	for _, p := range sb.Payments(b.APIKey) {
		if status == "" || p.Status == status {
			ids = append(ids, p.ID)
		}
	}
	return ids
}

func TestWalkWholeList(t *testing.T) {
	t.Parallel()
	g := startGateway(t, setup{})
	statuses := []string{"", "PENDING", "SUCCEEDED", "FAILED", "CANCELLED", "REFUNDED"}
	for _, first := range []int{1, 7, 20, 100} {
		for _, status := range statuses {
			if first == 1 && status != "" && status != "REFUNDED" {
				continue // page size 1 over every filter is slow and adds nothing
			}
			t.Run(fmt.Sprintf("first=%d,status=%s", first, status), func(t *testing.T) {
				got := walk(t, g, g.Biz[0], first, status)
				want := wantIDs(g.Biz[0], g.Sandbox, status)
				if len(want) == 0 {
					t.Fatal("sandbox has no payments for this filter")
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("walked %d ids, want %d in REST order (-want +got):\n%s", len(got), len(want), diff)
				}
			})
		}
	}
}

func TestWalkWithCustomStatusParam(t *testing.T) {
	t.Parallel()
	g := startGateway(t, setup{env: map[string]string{"REST_STATUS_PARAM": "payment_status"}})
	got := walk(t, g, g.Biz[1], 30, "FAILED")
	if want := wantIDs(g.Biz[1], g.Sandbox, "FAILED"); !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestResumeFromAnyEdge(t *testing.T) {
	t.Parallel()
	g := startGateway(t, setup{})
	b := g.Biz[0]
	all := wantIDs(b, g.Sandbox, "")
	r := g.Post(t, creds(b), `{ payments(first: 30) { edges { cursor node { id } } } }`, nil)
	r.WantNoErrors(t)
	var data struct{ Payments connection }
	r.Decode(t, &data)
	// page is what a test compares of one page: its ids and its flags.
	type page struct {
		IDs                          []string
		HasPreviousPage, HasNextPage bool
	}
	for _, i := range []int{0, 4, 18, 19, 29} {
		for _, first := range []int{1, 5, 100} {
			t.Run(fmt.Sprintf("after edge %d, first %d", i, first), func(t *testing.T) {
				r := g.Post(t, creds(b), `query($a: String, $n: Int) { payments(first: $n, after: $a) { nodes { id } pageInfo { hasNextPage hasPreviousPage } } }`,
					map[string]any{"a": data.Payments.Edges[i].Cursor, "n": first})
				r.WantNoErrors(t)
				var res struct{ Payments connection }
				r.Decode(t, &res)
				got := page{HasPreviousPage: res.Payments.PageInfo.HasPreviousPage, HasNextPage: res.Payments.PageInfo.HasNextPage}
				for _, n := range res.Payments.Nodes {
					got.IDs = append(got.IDs, n.ID)
				}
				want := page{IDs: all[i+1 : min(i+1+first, len(all))], HasPreviousPage: true, HasNextPage: i+1+first < len(all)}
				if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("page (-want +got):\n%s", diff)
				}
			})
		}
	}
}

func TestFirstZeroAndBadPaginationInput(t *testing.T) {
	t.Parallel()
	g := startGateway(t, setup{})
	b := g.Biz[0]
	r := g.Post(t, creds(b), `{ payments(first: 0) { edges { cursor } pageInfo { hasNextPage endCursor } } }`, nil)
	r.WantNoErrors(t)
	var data struct{ Payments connection }
	r.Decode(t, &data)
	if len(data.Payments.Edges) != 0 || !data.Payments.PageInfo.HasNextPage {
		t.Errorf("first 0: %+v", data.Payments)
	}

	r = g.Post(t, creds(b), `{ payments(first: 2, status: FAILED) { pageInfo { endCursor } } }`, nil)
	r.WantNoErrors(t)
	r.Decode(t, &data)
	failedCursor := *data.Payments.PageInfo.EndCursor

	g.Sandbox.ResetCalls()
	for _, tc := range []struct{ name, query string }{
		{"first -1", `{ payments(first: -1) { nodes { id } } }`},
		{"first 101", `{ payments(first: 101) { nodes { id } } }`},
		{"first huge", `{ payments(first: 2000000000) { nodes { id } } }`},
		{"garbage cursor", `{ payments(after: "not-a-cursor") { nodes { id } } }`},
		{"empty cursor", `{ payments(after: "") { nodes { id } } }`},
		{"tampered cursor", fmt.Sprintf(`{ payments(status: FAILED, after: %q) { nodes { id } } }`, tamper(failedCursor))},
		{"cursor of another filter", fmt.Sprintf(`{ payments(status: SUCCEEDED, after: %q) { nodes { id } } }`, failedCursor)},
		{"cursor without its filter", fmt.Sprintf(`{ payments(after: %q) { nodes { id } } }`, failedCursor)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := g.Post(t, creds(b), tc.query, nil)
			e := r.WantCode(t, "BAD_USER_INPUT")
			if e.Message == "" || !slices.Equal(e.Path, []any{"payments"}) {
				t.Errorf("error %+v", e)
			}
		})
	}
	if n := g.Sandbox.CallCount(""); n != 0 {
		t.Errorf("bad input made %d REST calls", n)
	}
}

func tamper(c string) string {
	b := []byte(c)
	i := len(b) / 2
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}

// linkView is a payment link as a test compares it: the description as ""
// when null (the REST API omits an empty one), the optional numbers and
// times as pointers.
type linkView struct {
	ID, URL, Slug, Title, Description string
	Amount                            moneyView
	IsReusable, IsActive              bool
	CurrentUses                       int
	MaxUses                           *int
	ExpiresAt                         *string
	SuccessURL                        string
	CreatedAt, UpdatedAt              string
}

type moneyView struct {
	Amount   string
	Paisa    int64
	Currency string
}

// TestPaymentLink reads every link of a business and compares each field
// with the sandbox's record; the sandbox has links with and without
// max_uses, so both the null and the number are seen.
func TestPaymentLink(t *testing.T) {
	t.Parallel()
	g := startGateway(t, setup{})
	b := g.Biz[0]
	links := g.Sandbox.PaymentLinks(b.APIKey)
	var sawNullMax, sawMax bool
	for _, l := range links {
		sawNullMax = sawNullMax || l.MaxUses == nil
		sawMax = sawMax || l.MaxUses != nil
		t.Run(l.ID, func(t *testing.T) {
			r := g.Post(t, creds(b), `query($id: ID!) { paymentLink(id: $id) { id url slug title description amount { amount paisa currency }
				isReusable isActive currentUses maxUses expiresAt successUrl createdAt updatedAt } }`, map[string]any{"id": l.ID})
			r.WantNoErrors(t)
			var data struct {
				PaymentLink struct {
					ID, URL, Slug, Title string
					Description          *string
					Amount               moneyView
					IsReusable, IsActive bool
					CurrentUses          int
					MaxUses              *int
					ExpiresAt            *string
					SuccessURL           *string
					CreatedAt, UpdatedAt string
				}
			}
			r.Decode(t, &data)
			got := data.PaymentLink
			gotView := linkView{ID: got.ID, URL: got.URL, Slug: got.Slug, Title: got.Title, Description: orEmpty(got.Description),
				Amount: got.Amount, IsReusable: got.IsReusable, IsActive: got.IsActive, CurrentUses: got.CurrentUses,
				MaxUses: got.MaxUses, ExpiresAt: got.ExpiresAt, SuccessURL: str(got.SuccessURL), CreatedAt: got.CreatedAt, UpdatedAt: got.UpdatedAt}
			want := linkView{ID: l.ID, URL: l.URL, Slug: l.Slug, Title: l.Title, Description: l.Description,
				Amount:     moneyView{Amount: taka(l.AmountPaisa), Paisa: l.AmountPaisa, Currency: l.Currency},
				IsReusable: l.IsReusable, IsActive: l.IsActive, CurrentUses: l.CurrentUses,
				MaxUses: l.MaxUses, ExpiresAt: l.ExpiresAt, SuccessURL: l.SuccessURL, CreatedAt: l.CreatedAt, UpdatedAt: l.UpdatedAt}
			if diff := cmp.Diff(want, gotView); diff != "" {
				t.Errorf("link %s (-sandbox +gateway):\n%s", l.ID, diff)
			}
		})
	}
	if !sawNullMax || !sawMax {
		t.Error("sandbox links should have some with and some without max_uses")
	}
}

// TestNodes resolves a mix of ids in one nodes query: a link, a malformed
// id, a payment, an unknown payment and a path-like id. Each bad id is
// null with its own error at its index; the good ones are served.
func TestNodes(t *testing.T) {
	t.Parallel()
	g := startGateway(t, setup{})
	b := g.Biz[0]
	link := g.Sandbox.PaymentLinks(b.APIKey)[0]
	pay := g.Sandbox.Payments(b.APIKey)[5]
	r := g.Post(t, creds(b), `query($ids: [ID!]!) { nodes(ids: $ids) { __typename id ... on Payment { status } ... on PaymentLink { url } } }`,
		map[string]any{"ids": []string{link.ID, "bogus_1", pay.ID, "pay_prod_00000000000000000000000000000000", "pay_../x"}})
	type node struct{ Typename, ID, Status, URL string }
	var data struct {
		Nodes []*node `json:"nodes"`
	}
	r.Decode(t, &data)
	// (__typename does not decode into Typename: it is left out on both sides.)
	want := []*node{{ID: link.ID, URL: link.URL}, nil, {ID: pay.ID, Status: pay.Status}, nil, nil}
	if diff := cmp.Diff(want, data.Nodes); diff != "" {
		t.Fatalf("nodes (-want +got):\n%s\n%s", diff, r.Data)
	}
	type errAt struct {
		Path any
		Code string
	}
	var gotErrs []errAt
	for _, e := range r.Errors {
		gotErrs = append(gotErrs, errAt{e.Path, e.Code()})
		if e.Code() == "NOT_FOUND" && e.Message != "Payment not found" {
			t.Errorf("NOT_FOUND message %q, want the REST API's", e.Message)
		}
	}
	wantErrs := []errAt{
		{[]any{"nodes", float64(1)}, "BAD_USER_INPUT"},
		{[]any{"nodes", float64(3)}, "NOT_FOUND"},
		{[]any{"nodes", float64(4)}, "BAD_USER_INPUT"},
	}
	sortErrs := cmpopts.SortSlices(func(a, b errAt) bool { return fmt.Sprint(a.Path) < fmt.Sprint(b.Path) })
	if diff := cmp.Diff(wantErrs, gotErrs, sortErrs); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

// TestNode resolves one payment through node(id:).
func TestNode(t *testing.T) {
	t.Parallel()
	g := startGateway(t, setup{})
	b := g.Biz[0]
	pay := g.Sandbox.Payments(b.APIKey)[5]
	r := g.Post(t, creds(b), fmt.Sprintf(`{ node(id: %q) { id ... on Payment { amount { paisa } } } }`, pay.ID), nil)
	r.WantNoErrors(t)
	if !strings.Contains(string(r.Data), fmt.Sprintf(`"paisa":%d`, pay.AmountPaisa)) {
		t.Errorf("node = %s", r.Data)
	}
}

// sessionView is the part of a checkout session TestCheckoutSession
// compares field by field (the metadata is checked on its own: sorted by
// key).
type sessionView struct {
	SessionID, Reference, PaymentID, Status, PaymentStatus string
	Amount, Subtotal                                       amountView
	City, Address                                          string
	PaymentIDOfPayment                                     string // payment { id }
	CreatedAt, UpdatedAt                                   string
}

type amountView struct {
	Amount string
	Paisa  int64
}

func TestCheckoutSession(t *testing.T) {
	t.Parallel()
	g := startGateway(t, setup{})
	b := g.Biz[1]
	for _, s := range g.Sandbox.CheckoutSessions(b.APIKey) {
		for _, key := range []string{s.ID, s.Reference} {
			t.Run(key, func(t *testing.T) {
				r := g.Post(t, creds(b), `query($id: String!) { checkoutSession(id: $id) { sessionId reference paymentId status paymentStatus
				amount { amount paisa currency } subtotal { amount paisa } customer { name email phone address city }
				successUrl cancelUrl transactionId paymentMethod metadata { key value } createdAt updatedAt payment { id } } }`, map[string]any{"id": key})
				r.WantNoErrors(t)
				var data struct {
					CheckoutSession struct {
						SessionID, Reference, PaymentID, Status, PaymentStatus string
						Amount, Subtotal                                       struct {
							Amount string
							Paisa  int64
						}
						Customer             struct{ Name, Email, Phone, Address, City string }
						Metadata             []struct{ Key, Value string }
						Payment              struct{ ID string }
						CreatedAt, UpdatedAt string
					}
				}
				r.Decode(t, &data)
				got := data.CheckoutSession
				wantView := sessionView{SessionID: s.ID, Reference: s.Reference, PaymentID: s.PaymentID, Status: s.Status, PaymentStatus: s.PaymentStatus,
					Amount: amountView{s.Amount, s.AmountPaisa}, Subtotal: amountView{s.Subtotal, s.SubtotalPaisa},
					City: s.Customer.City, Address: s.Customer.Address, PaymentIDOfPayment: s.PaymentID, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt}
				gotView := sessionView{SessionID: got.SessionID, Reference: got.Reference, PaymentID: got.PaymentID, Status: got.Status, PaymentStatus: got.PaymentStatus,
					Amount: amountView{got.Amount.Amount, got.Amount.Paisa}, Subtotal: amountView{got.Subtotal.Amount, got.Subtotal.Paisa},
					City: got.Customer.City, Address: got.Customer.Address, PaymentIDOfPayment: got.Payment.ID, CreatedAt: got.CreatedAt, UpdatedAt: got.UpdatedAt}
				if diff := cmp.Diff(wantView, gotView); diff != "" {
					t.Errorf("session by %s (-sandbox +gateway):\n%s", key, diff)
				}
				if len(got.Metadata) != len(s.MetaData) {
					t.Fatalf("metadata %v, want %v", got.Metadata, s.MetaData)
				}
				want := map[string]string{}
				for _, m := range s.MetaData {
					want[m.Key] = m.Value
				}
				for i, m := range got.Metadata {
					if want[m.Key] != m.Value || (i > 0 && got.Metadata[i-1].Key >= m.Key) {
						t.Errorf("metadata %v is not meta_data %v sorted by key", got.Metadata, s.MetaData)
					}
				}
			})
		}
	}
	r := g.Post(t, creds(b), `{ checkoutSession(id: "NOSUCHREF1") { sessionId } }`, nil)
	if e := r.WantCode(t, "NOT_FOUND"); e.Message != "Checkout session not found" {
		t.Errorf("message %q", e.Message)
	}
}

func TestIDsNeverChangeTheRESTPath(t *testing.T) {
	t.Parallel()
	g := startGateway(t, setup{})
	b := g.Biz[0]
	for _, id := range []string{"../payment-links/pl_x", "a?b", "pay_prod_x/../../payment-links/pl_1", "pay_%2e%2e", "pay_x#frag", "pay_ x", "", ".."} {
		for _, q := range []string{
			`query($id: ID!) { payment(id: $id) { id } }`,
			`query($id: ID!) { paymentLink(id: $id) { id } }`,
			`query($id: String!) { checkoutSession(id: $id) { sessionId } }`,
			`query($id: ID!) { node(id: $id) { id } }`,
		} {
			g.Sandbox.ResetCalls()
			r := g.Post(t, creds(b), q, map[string]any{"id": id})
			r.WantCode(t, "BAD_USER_INPUT")
			if n := g.Sandbox.CallCount(""); n != 0 {
				t.Errorf("id %q made %d REST calls: %+v", id, n, g.Sandbox.Calls())
			}
		}
	}
}

func TestMissingCredentials(t *testing.T) {
	t.Parallel()
	g := startGateway(t, setup{})
	b := g.Biz[0]
	for name, h := range map[string]map[string][]string{
		"none":        nil,
		"key only":    {"X-Api-Key": {b.APIKey}},
		"secret only": {"X-Api-Secret": {b.APISecret}},
	} {
		t.Run(name, func(t *testing.T) {
			g.Sandbox.ResetCalls()
			r := g.Post(t, h, `{ payments(first: 1) { nodes { id } } payment(id: "pay_prod_1") { id } }`, nil)
			if diff := cmp.Diff([]string{"UNAUTHENTICATED", "UNAUTHENTICATED"}, r.Codes()); diff != "" {
				t.Fatalf("error codes (-want +got):\n%s\n%+v", diff, r.Errors)
			}
			if n := g.Sandbox.CallCount(""); n != 0 {
				t.Errorf("%d REST calls without credentials", n)
			}
		})
	}
	r := g.Post(t, nil, `{ __schema { queryType { name } } __typename }`, nil)
	r.WantNoErrors(t)
	if !strings.Contains(string(r.Data), `"Query"`) {
		t.Errorf("introspection: %s", r.Data)
	}
	r = g.Post(t, creds(sandbox.Business{APIKey: "ak_test_wrong", APISecret: "sk_test_wrong"}), `{ payment(id: "pay_prod_1") { id } }`, nil)
	r.WantCode(t, "UNAUTHENTICATED")
}
