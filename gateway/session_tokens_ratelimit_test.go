package gateway_test

import (
	"net/http"
	"testing"
	"time"
)

// TestMintsChargedToThePair: each POST /auth/token is one REST call
// charged to its pair's REST-calls budget (issue 22), so a pair's mints
// and queries together stay within burst + rate x t.
func TestMintsChargedToThePair(t *testing.T) {
	const burst, rate = 5, 1
	rig := startTokenRig(t, map[string]string{
		"Config.RateLimitRESTBurst": "5", "RATE_LIMIT_REST_CALLS_PER_SECOND": "1", "MAX_COMPLEXITY": "5",
	})
	b := rig.Biz[0]
	start := time.Now()
	before := rig.Sandbox.CallCount("")
	minted, limited := 0, 0
	for i := 0; i < 20; i++ {
		a := rig.mint(t, creds(b), `{"scope":{"kind":"all"}}`)
		switch {
		case a.Status == http.StatusOK:
			minted++
		case a.Status == http.StatusTooManyRequests && len(a.Errors) == 1 && a.Errors[0].Code() == "RATE_LIMITED":
			limited++
		default:
			t.Fatalf("mint %d: status %d, errors %+v", i, a.Status, a.Errors)
		}
	}
	// Queries of the same pair share the budget the mints spent.
	r := rig.Post(t, creds(b), `{ payments(first: 1) { nodes { id } } }`, nil)
	calls := rig.Sandbox.CallCount("") - before
	bound := burst + int(rate*time.Since(start).Seconds()) + 1
	if calls > bound {
		t.Errorf("%d REST calls for 20 mints and a query, want at most %d (burst %d + %d/s x t)", calls, bound, burst, rate)
	}
	if minted == 0 || limited == 0 {
		t.Errorf("minted %d, limited %d: want some of each", minted, limited)
	}
	if len(r.Errors) == 0 && calls > burst {
		t.Errorf("the query was served past the budget the mints spent")
	}
}
