package graph

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"paygraph/graph/receipt"
	"paygraph/sandbox"
)

// TestReceiptCountsSharedCalls: of two operations of one pair asking for
// one payment at the same moment, one makes the REST call and the other
// waits for it; the second's receipt says so (unmade.shared), and made
// counts only the call the first made.
func TestReceiptCountsSharedCalls(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		sb := sandbox.New(sandbox.Options{})
		hold := make(chan struct{})
		var calls sync.WaitGroup
		rig := NewRig(t, RigConfig{Sandbox: sb, Server: ServerConfig{Cost: receipt.CostReceipts{Enabled: true}},
			RESTHandler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.HasPrefix(r.URL.Path, "/api/v1/payments/") {
					<-hold
				}
				sb.ServeHTTP(w, r)
			})})
		id := sb.Payments(rig.Biz.APIKey)[0].ID
		out := make([]answer, 2)
		for i := range out {
			calls.Go(func() {
				out[i] = rig.post(t, `query P($id: ID!) { payment(id: $id) { id } }`, map[string]any{"id": id})
			})
			synctest.Wait() // the first holds its call at the REST API, the second waits for it
		}
		close(hold)
		calls.Wait()
		for i, want := range []struct{ made, shared int }{{1, 0}, {0, 1}} {
			var got struct {
				Extensions struct {
					Cost receipt.Receipt `json:"cost"`
				} `json:"extensions"`
			}
			if err := json.Unmarshal(out[i].body, &got); err != nil || len(out[i].Errors) != 0 {
				t.Fatalf("operation %d: %v %s", i, err, out[i].body)
			}
			c := got.Extensions.Cost
			shared := 0
			if c.Unmade != nil {
				shared = c.Unmade.Shared
				if c.Unmade.NotReached != 0 {
					t.Errorf("operation %d: %d calls not reached, want 0 (a shared call is not one)", i, c.Unmade.NotReached)
				}
			}
			if c.Estimated != 1 || c.Made != want.made || shared != want.shared {
				t.Errorf("operation %d: estimated %d, made %d, shared %d; want 1, %d, %d", i, c.Estimated, c.Made, shared, want.made, want.shared)
			}
		}
	})
}
