package gateway_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"paygraph/internal/gqltest"
	"paygraph/sandbox"
)

const (
	routeList    = "/api/v1/payments"
	routePayment = "/api/v1/payments/{id}"
	routeLink    = "/api/v1/payment-links/{id}"
	routeSession = "/api/v1/checkout/sessions/{id}"
)

func TestBatchingCallCounts(t *testing.T) {
	g := startGateway(t, setup{})
	b := g.Biz[0]
	pays := g.Sandbox.Payments(b.APIKey)
	sess := g.Sandbox.CheckoutSessions(b.APIKey)[0]
	link := g.Sandbox.PaymentLinks(b.APIKey)[0]

	var aliases strings.Builder
	aliases.WriteString("{")
	for i := range 10 {
		fmt.Fprintf(&aliases, " a%d: payment(id: %q) { id amount { paisa } customer { address } }", i, pays[0].ID)
	}
	aliases.WriteString(" }")

	for _, tc := range []struct {
		name  string
		query string
		want  map[string]int
	}{
		{"10 aliases of one payment", aliases.String(), map[string]int{routePayment: 1}},
		{"session, its payment and payment(id:) of it", fmt.Sprintf(`{
			checkoutSession(id: %q) { payment { id status } }
			payment(id: %q) { id customer { address } }
			node(id: %q) { id } }`, sess.Reference, sess.PaymentID, sess.PaymentID),
			map[string]int{routeSession: 1, routePayment: 1}},
		{"session by reference and by id", fmt.Sprintf(`{
			a: checkoutSession(id: %q) { sessionId } b: checkoutSession(id: %q) { reference } c: checkoutSession(id: %q) { amount { paisa } } }`,
			sess.Reference, sess.ID, sess.Reference), map[string]int{routeSession: 1}},
		{"session by id then by reference", fmt.Sprintf(`{
			a: checkoutSession(id: %q) { sessionId } b: checkoutSession(id: %q) { reference } }`,
			sess.ID, sess.Reference), map[string]int{routeSession: 1}},
		{"list of 50 with addresses", `{ payments(first: 50) { nodes { id customer { address } } } }`,
			map[string]int{routeList: 1, routePayment: 50}},
		{"list of 50 without addresses", `{ payments(first: 50) { nodes { id amount { amount } customer { name email phone } } edges { cursor } } }`,
			map[string]int{routeList: 1}},
		{"list items and payment(id:) of one of them", fmt.Sprintf(`{ payments(first: 5) { nodes { customer { address } } } payment(id: %q) { id } }`, pays[2].ID),
			map[string]int{routeList: 1, routePayment: 5}},
		{"list items and payment(id:) of each of them", fmt.Sprintf(`{ payments(first: 5) { nodes { customer { address } } }
			a: payment(id: %q) { id } b: payment(id: %q) { id } c: payment(id: %q) { id } d: payment(id: %q) { id } e: payment(id: %q) { id } }`,
			pays[0].ID, pays[1].ID, pays[2].ID, pays[3].ID, pays[4].ID),
			map[string]int{routeList: 1, routePayment: 5}},
		{"nodes with duplicates", fmt.Sprintf(`{ nodes(ids: [%q, %q, %q, %q]) { id } }`, pays[0].ID, link.ID, pays[0].ID, link.ID),
			map[string]int{routePayment: 1, routeLink: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g.Sandbox.ResetCalls()
			r := g.Post(t, creds(b), tc.query, nil)
			r.WantNoErrors(t)
			total := 0
			for route, n := range tc.want {
				total += n
				if got := g.Sandbox.CallCount(route); got != n {
					t.Errorf("%s: %d calls, want %d", route, got, n)
				}
			}
			if got := g.Sandbox.CallCount(""); got != total {
				t.Errorf("%d REST calls in all, want %d", got, total)
			}
		})
	}
}

func TestNodesOfHundredIDs(t *testing.T) {
	t.Parallel()
	g := startGateway(t, setup{})
	b := g.Biz[0]
	pays := g.Sandbox.Payments(b.APIKey)
	ids := make([]string, 100)
	for i := range ids {
		ids[i] = pays[i].ID
		if i%10 == 3 {
			ids[i] = fmt.Sprintf("pay_prod_%032d", i) // missing
		}
	}
	g.Sandbox.ResetCalls()
	r := g.Post(t, creds(b), `query($ids: [ID!]!) { nodes(ids: $ids) { id } }`, map[string]any{"ids": ids})
	var data struct{ Nodes []*struct{ ID string } }
	r.Decode(t, &data)
	if len(data.Nodes) != 100 {
		t.Fatalf("%d nodes", len(data.Nodes))
	}
	for i, n := range data.Nodes {
		if (i%10 == 3) != (n == nil) || (n != nil && n.ID != ids[i]) {
			t.Errorf("node %d = %+v, want %s", i, n, ids[i])
		}
	}
	if len(r.Errors) != 10 {
		t.Errorf("%d errors, want 10", len(r.Errors))
	}
	for _, e := range r.Errors {
		if i := int(e.Path[1].(float64)); i%10 != 3 || e.Extensions["code"] != "NOT_FOUND" {
			t.Errorf("error %+v", e)
		}
	}
	if n := g.Sandbox.CallCount(routePayment); n != 100 {
		t.Errorf("%d payment calls, want 100", n)
	}
	r = g.Post(t, creds(b), `query($ids: [ID!]!) { nodes(ids: $ids) { id } }`, map[string]any{"ids": append(ids, ids[0])})
	r.WantCode(t, "BAD_USER_INPUT")
}

// TestTwoBusinessesSameID: each caller gets its own answer for the same id.
func TestTwoBusinessesSameID(t *testing.T) {
	t.Parallel()
	g := startGateway(t, setup{})
	a, b := g.Biz[0], g.Biz[1]
	id := g.Sandbox.Payments(a.APIKey)[0].ID
	q := fmt.Sprintf(`{ payment(id: %q) { id customer { name } } }`, id)
	for range 20 {
		var wg sync.WaitGroup
		var ra, rb *gqltest.Response
		wg.Add(2)
		go func() { defer wg.Done(); ra = g.Post(t, creds(a), q, nil) }()
		go func() { defer wg.Done(); rb = g.Post(t, creds(b), q, nil) }()
		wg.Wait()
		ra.WantNoErrors(t)
		if !strings.Contains(string(ra.Data), id) {
			t.Fatalf("owner got %s", ra.Data)
		}
		if rb.WantCode(t, "NOT_FOUND"); string(rb.Data) != `{"payment":null}` {
			t.Fatalf("other business got %s", rb.Data)
		}
	}
}

// TestListJoinIsConcurrent: the 50 addresses of a page are fetched
// together, not one after another: every detail call is held until all 50
// are in flight at once (REST_MAX_CONCURRENCY=64 leaves room for them), so
// the answer comes only if the join started them all before any ended. No
// clock decides it (a join that fetched one at a time would hold its first
// call until REST_TIMEOUT and fail).
func TestListJoinIsConcurrent(t *testing.T) {
	const details = 50
	sb := sandbox.New(sandbox.Options{})
	var arrived atomic.Int64
	all := make(chan struct{})
	rest := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/api/v1/payments/") {
			if arrived.Add(1) == details {
				close(all)
			}
			select {
			case <-all:
			case <-r.Context().Done():
				return
			}
		}
		sb.ServeHTTP(w, r)
	})
	g := startGateway(t, setup{env: map[string]string{"REST_MAX_CONCURRENCY": "64"}, rest: rest})
	r := g.Post(t, creds(sb.Businesses()[0]), fmt.Sprintf(`{ payments(first: %d) { nodes { customer { address } } } }`, details), nil)
	if len(r.Errors) > 0 {
		t.Errorf("%d errors, the first: %+v", len(r.Errors), r.Errors[0])
	}
	if n := arrived.Load(); n != details {
		t.Errorf("%d detail calls, want %d", n, details)
	}
}

// TestClientDisconnectCancelsRESTCalls: when the caller goes away, the REST
// calls made for it end at once (net/http's transport aborts a call whose
// context is canceled), long before REST_TIMEOUT.
func TestClientDisconnectCancelsRESTCalls(t *testing.T) {
	for _, tc := range []struct{ name, restTimeout string }{
		{"net/http", "30s"}, // ended by the disconnect, long before the timeout
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Three calls: each closes its started and, when the REST side
			// sees it canceled, its cancelled.
			var started, cancelled [3]chan struct{}
			for i := range started {
				started[i], cancelled[i] = make(chan struct{}), make(chan struct{})
			}
			var calls atomic.Int64
			release := make(chan struct{})
			t.Cleanup(func() { close(release) })
			rest := &countingREST{handle: func(w http.ResponseWriter, r *http.Request) {
				i := calls.Add(1) - 1
				if i >= int64(len(started)) {
					return // a fourth call: counted, and reported below
				}
				close(started[i])
				select {
				case <-r.Context().Done():
					close(cancelled[i])
				case <-release:
				}
			}}
			g := startGateway(t, setup{env: map[string]string{"REST_TIMEOUT": tc.restTimeout}, rest: rest})
			ctx, cancel := context.WithCancel(context.Background())
			body := []byte(`{"query":"{ a: payment(id: \"pay_prod_1\") { id } b: payment(id: \"pay_prod_2\") { id } c: paymentLink(id: \"pl_1\") { id } }"}`)
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, g.URL+"/graphql", bytes.NewReader(body))
			req.Header = anyCreds.Clone()
			req.Header.Set("Content-Type", "application/json")
			done := make(chan struct{})
			go func() {
				defer close(done)
				resp, err := http.DefaultClient.Do(req)
				if err == nil {
					resp.Body.Close()
				}
			}()
			for i := range started {
				awaitClosed(t, started[i], "the REST calls to start")
			}
			cancel()
			<-done
			for i := range cancelled {
				awaitClosed(t, cancelled[i], "the REST calls to end")
			}
			if n := calls.Load(); n != 3 {
				t.Errorf("%d REST calls, want 3 (none retried after the disconnect)", n)
			}
		})
	}
}

// waitFor polls cond until it holds. The bound only ends a broken run:
// nothing passes by it.
func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	poll := time.NewTicker(5 * time.Millisecond)
	defer poll.Stop()
	deadline := time.After(10 * time.Second)
	for !cond() {
		select {
		case <-poll.C:
		case <-deadline:
			t.Fatal("condition not met within 10s")
		}
	}
}

// awaitClosed waits for ch to be closed. The bound only ends a broken
// run: nothing passes by it.
func awaitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(time.Minute):
		t.Fatalf("waited a minute for %s", what)
	}
}
