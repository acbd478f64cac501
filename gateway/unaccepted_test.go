package gateway_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"paygraph/sandbox"
)

// TestUnacceptedPairs: with the default bounds on credential pairs the
// REST API has not accepted (issue 22), nodes(ids: [100 ids]) with an
// invented pair makes one REST call and answers one error (the field's,
// not one per id), a repeat of the pair none, and the sandbox's merchant
// is served.
func TestUnacceptedPairs(t *testing.T) {
	sb := sandbox.New(sandbox.Options{})
	rest := &countingREST{handle: sb.ServeHTTP}
	g := startGateway(t, setup{env: map[string]string{"REST_UNACCEPTED_CALLS_PER_SECOND": "20"}, rest: rest})
	ids := make([]string, 100)
	for i := range ids {
		ids[i] = fmt.Sprintf("%q", fmt.Sprintf("pay_prod_%032x", i))
	}
	q := `{ nodes(ids: [` + strings.Join(ids, ",") + `]) { id } }`
	fake := http.Header{"X-Api-Key": {"ak_test_invented1"}, "X-Api-Secret": {"sk_test_invented1"}}
	for _, tc := range []struct {
		name      string
		wantCalls int64
		oneError  bool // the operation's or the field's one error
	}{
		{"first request of the pair", 1, true},
		{"a repeat of the pair", 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := g.Post(t, fake, q, nil)
			codes := r.Codes() // as many as the error cap lets through
			for _, c := range codes {
				if c != "UNAUTHENTICATED" {
					t.Errorf("codes = %v, want only UNAUTHENTICATED", codes)
					break
				}
			}
			if len(codes) == 0 {
				t.Error("no error for an invented pair")
			}
			if tc.oneError && len(codes) != 1 {
				t.Errorf("%d errors, want the operation's one", len(codes))
			}
			if got := rest.calls.Load(); got != tc.wantCalls {
				t.Errorf("REST calls so far = %d, want %d", got, tc.wantCalls)
			}
		})
	}
	t.Run("refused before validation", func(t *testing.T) {
		// The edge asks as soon as graph's limits saw that the root
		// fields make REST calls (gqlhttp/ratelimit.go): a refused pair's
		// document is not validated, so a field that does not exist is
		// not what it is told.
		r := g.Post(t, fake, `{ payment(id: "pay_prod_x") { id noSuchField } }`, nil)
		if codes := r.Codes(); len(codes) != 1 || codes[0] != "UNAUTHENTICATED" {
			t.Errorf("codes = %v, want the pair's one UNAUTHENTICATED before validation", codes)
		}
		if got := rest.calls.Load(); got != 1 {
			t.Errorf("REST calls so far = %d, want 1", got)
		}
	})
	biz := sb.Businesses()[0]
	r := g.Post(t, creds(biz), `{ payments(first: 5) { edges { node { id } } } }`, nil)
	r.WantNoErrors(t)
}
