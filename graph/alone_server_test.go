package graph_test

import (
	"context"
	"net/http/httptest"
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
// estimate is one (a payment, a node) fetches its payment without the
// dataloader; one that may make more (aliases, a checkout session with
// its payment) goes through it, and identical aliases still share one
// call.
func TestOperationOfOneCallSkipsTheLoader(t *testing.T) {
	sb := sandbox.New(sandbox.Options{})
	srv := httptest.NewServer(sb)
	t.Cleanup(srv.Close)
	rc, err := restclient.New(restclient.Config{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	fx := sb.Fixtures()[0]
	for _, tc := range []struct {
		name  string
		query string
		vars  map[string]any
		want  string // the payment details fetched: alone or batched
	}{
		{"payment", `query($id: ID!) { payment(id: $id) { id } }`, map[string]any{"id": fx.PaymentID}, "alone"},
		{"node", `query($id: ID!) { node(id: $id) { id } }`, map[string]any{"id": fx.PaymentID}, "alone"},
		{"nodes of one id", `query($id: ID!) { nodes(ids: [$id]) { id } }`, map[string]any{"id": fx.PaymentID}, "alone"},
		{"two identical aliases", `query($id: ID!) { a: payment(id: $id) { id } b: payment(id: $id) { id } }`, map[string]any{"id": fx.PaymentID}, "batched"},
		{"checkout session with its payment", `query($id: String!) { checkoutSession(id: $id) { payment { id } } }`, map[string]any{"id": fx.CheckoutSessionID}, "batched"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rest := &stackedREST{Client: rc}
			ans, _ := gqlPost(t, serveGraphQL(rest, graph.ServerConfig{}), fx.Business, tc.query, tc.vars)
			if len(ans.Errors) > 0 || !strings.Contains(string(ans.Data), `"pay_`) {
				t.Fatalf("answer %s %+v", ans.Data, ans.Errors)
			}
			if len(rest.batched) != 1 {
				t.Fatalf("%d payment details fetched, want 1", len(rest.batched))
			}
			if got := map[bool]string{false: "alone", true: "batched"}[rest.batched[0]]; got != tc.want {
				t.Errorf("payment fetched %s, want %s", got, tc.want)
			}
		})
	}
}
