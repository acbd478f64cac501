package graph

import (
	"encoding/json"
	"testing"

	"paygraph/graph/errcode"
	"paygraph/internal/gqltest"
)

// TestComplexityLimit: the default budget (500 REST calls) serves the
// documented uses and refuses issue 11's starvation query before any REST
// call.
func TestComplexityLimit(t *testing.T) {
	t.Parallel()
	r := NewRig(t, RigConfig{})
	sessions := r.Sandbox.CheckoutSessions(r.Biz.APIKey)
	var ids []string
	for _, p := range r.Sandbox.Payments(r.Biz.APIKey) {
		ids = append(ids, p.ID)
	}
	if len(ids) < 100 {
		t.Fatalf("the sandbox has %d payments, want 100", len(ids))
	}
	ids = ids[:100]
	idList, _ := json.Marshal(ids)

	for _, tc := range []struct{ name, query string }{
		{"100-item list with every join", `{ payments(first: 100) { edges { cursor node { ` + gqltest.EveryPaymentField + ` } } nodes { ` + gqltest.EveryPaymentField + ` } } }`},
		{"100 nodes", `{ nodes(ids: ` + string(idList) + `) { id ... on Payment { ` + gqltest.EveryPaymentField + ` } } }`},
		{"checkout session with its payment", `{ checkoutSession(id: "` + sessions[0].Reference + `") { sessionId payment { ` + gqltest.EveryPaymentField + ` } } }`},
	} {
		t.Run(tc.name+" is served", func(t *testing.T) {
			r.post(t, tc.query, nil).wantNoErrors(t)
		})
	}

	t.Run("49 aliases of nodes(100 ids) are refused", func(t *testing.T) {
		r.Sandbox.ResetCalls()
		a := r.post(t, gqltest.NodesQuery(49), map[string]any{"ids": ids})
		a.wantRefused(t, errcode.ComplexityLimit)
		if n := r.Sandbox.CallCount(""); n != 0 {
			t.Errorf("%d REST calls", n)
		}
	})
	t.Run("first from a variable counts", func(t *testing.T) {
		q := fiveLists
		r.post(t, q, map[string]any{"n": 100}).wantRefused(t, errcode.ComplexityLimit) // 5 × (1 + 100)
		r.post(t, q, map[string]any{"n": 10}).wantNoErrors(t)                          // 5 × (1 + 10)
	})
}

// fiveLists is five lists of $n payments with their addresses: 5 × (1 +
// $n) REST calls, over the default budget for n > 98.
const fiveLists = `query($n: Int) {
	a: payments(first: $n) { nodes { customer { address } } }
	b: payments(first: $n, status: PENDING) { nodes { customer { address } } }
	c: payments(first: $n, status: FAILED) { nodes { customer { address } } }
	d: payments(first: $n, status: CANCELLED) { nodes { customer { address } } }
	e: payments(first: $n, status: REFUNDED) { nodes { customer { address } } } }`
