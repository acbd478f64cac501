package graph_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"paygraph/graph"
	"paygraph/restclient"
	"paygraph/sandbox"
)

// stackedREST passes every call to the REST client and remembers, for
// each payment detail, whether it was fetched inside the dataloader's
// batch (its goroutine's stack names it): one by one (GetPayment, the
// alone path) or by the client's fan-out (GetPayments, a batch).
type stackedREST struct {
	*restclient.Client
	mu      sync.Mutex
	batched []bool
}

func (s *stackedREST) record(n int) {
	buf := make([]byte, 64<<10)
	buf = buf[:runtime.Stack(buf, false)]
	s.mu.Lock()
	for range n {
		s.batched = append(s.batched, strings.Contains(string(buf), "dataloader"))
	}
	s.mu.Unlock()
}

func (s *stackedREST) GetPayment(ctx context.Context, id string) (*restclient.Payment, error) {
	s.record(1)
	return s.Client.GetPayment(ctx, id)
}

func (s *stackedREST) GetPayments(ctx context.Context, ids []string) []restclient.Result[*restclient.Payment] {
	s.record(len(ids))
	return s.Client.GetPayments(ctx, ids)
}

// TestOperationOfOneCallSkipsTheLoader: an operation whose REST-call
// estimate is one (a payment, a node, aliases of one id) fetches its
// payment without the dataloader, identical aliases sharing the one call;
// one that may make more (aliases of two ids, a checkout session with its
// payment) goes through it.
func TestOperationOfOneCallSkipsTheLoader(t *testing.T) {
	t.Parallel()
	sb := sandbox.New(sandbox.Options{})
	fx := sb.Fixtures()[0]
	other := sb.Payments(fx.Business.APIKey)[1].ID
	for _, tc := range []struct {
		name  string
		query string
		vars  map[string]any
		want  string // each payment detail fetched: alone or batched
	}{
		{"payment", `query($id: ID!) { payment(id: $id) { id } }`, map[string]any{"id": fx.PaymentID}, "alone"},
		{"node", `query($id: ID!) { node(id: $id) { id } }`, map[string]any{"id": fx.PaymentID}, "alone"},
		{"nodes of one id", `query($id: ID!) { nodes(ids: [$id]) { id } }`, map[string]any{"id": fx.PaymentID}, "alone"},
		{"two identical aliases", `query($id: ID!) { a: payment(id: $id) { id } b: payment(id: $id) { id } }`, map[string]any{"id": fx.PaymentID}, "alone"},
		{"a payment and its node", `query($id: ID!) { a: payment(id: $id) { id } b: node(id: $id) { id } }`, map[string]any{"id": fx.PaymentID}, "alone"},
		{"twenty aliases of one id", aliasesOf(20, "$id"), map[string]any{"id": fx.PaymentID}, "alone"},
		{"aliases of two ids", `query($id: ID!, $other: ID!) { a: payment(id: $id) { id } b: payment(id: $other) { id } c: payment(id: $id) { id } }`, map[string]any{"id": fx.PaymentID, "other": other}, "batched,batched"},
		{"checkout session with its payment", `query($id: String!) { checkoutSession(id: $id) { payment { id } } }`, map[string]any{"id": fx.CheckoutSessionID}, "batched"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var rest *stackedREST
			h, _ := serveGraphQL(t, graph.RigConfig{Sandbox: sb, OverHTTP: true, WrapREST: func(rc *restclient.Client) graph.REST {
				rest = &stackedREST{Client: rc}
				return rest
			}})
			ans, _ := gqlPost(t, h, fx.Business, tc.query, tc.vars)
			if len(ans.Errors) > 0 || !strings.Contains(string(ans.Data), `"pay_`) {
				t.Fatalf("answer %s %+v", ans.Data, ans.Errors)
			}
			var got []string
			for _, b := range rest.batched {
				got = append(got, map[bool]string{false: "alone", true: "batched"}[b])
			}
			if strings.Join(got, ",") != tc.want {
				t.Errorf("payment details fetched %v, want %s", got, tc.want)
			}
		})
	}
}

// aliasesOf is a query of n aliases of payment(id: arg).
func aliasesOf(n int, arg string) string {
	var b strings.Builder
	b.WriteString("query($id: ID!) {")
	for i := range n {
		fmt.Fprintf(&b, " p%d: payment(id: %s) { id }", i, arg)
	}
	b.WriteString(" }")
	return b.String()
}
