package gateway_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"paygraph/observe"
)

// TestOperationMetricLabelsSurviveJunk: 200 distinct operation names
// from callers the REST API does not accept (no credentials, one header,
// a wrong secret; with and without REST calls; POST and GET) take no
// place in the operation label set, so a real operation served afterwards
// still gets a label of its own. The set's cap holds for accepted callers.
func TestOperationMetricLabelsSurviveJunk(t *testing.T) {
	t.Parallel()
	// The anonymous budget off: the junk must reach the labels to show
	// that it takes none (TestAnonymousBudget tests that budget).
	g := startGateway(t, setup{env: map[string]string{"RATE_LIMIT_ANONYMOUS_PER_SECOND": "0"}})
	biz := g.Biz[0]
	pay := g.Sandbox.Payments(biz.APIKey)[0].ID
	callers := []struct {
		name   string
		header http.Header
	}{
		{"no credentials", nil},
		{"key only", http.Header{"X-Api-Key": {biz.APIKey}}},
		{"wrong secret", http.Header{"X-Api-Key": {biz.APIKey}, "X-Api-Secret": {"sk_test_notthesecretatall"}}},
		{"invented pair", http.Header{"X-Api-Key": {"ak_test_invented"}, "X-Api-Secret": {"sk_test_invented"}}},
	}
	const junk = 200
	for i := range junk {
		c := callers[i%len(callers)]
		name := fmt.Sprintf("Junk%03d", i)
		var q string
		if i%2 == 0 {
			q = `query ` + name + ` { payment(id: "` + pay + `") { id } }` // reaches the REST API without credentials it accepts
		} else {
			q = `query ` + name + ` { __typename }` // no REST call at all
		}
		if i%5 == 0 {
			g.Send(t, http.MethodGet, "/graphql?"+url.Values{"query": {q}}.Encode(), c.header, nil)
		} else {
			g.Post(t, c.header, q, nil)
		}
	}
	served := g.Post(t, creds(biz), `query RealPaymentScreen($id: ID!) { payment(id: $id) { id status } }`, map[string]any{"id": pay})
	served.WantNoErrors(t)

	m, raw := scrape(t, g)
	for _, tc := range []struct {
		name   string
		series string
		want   float64
	}{
		{"the real operation has its own label", `paygraph_graphql_requests_total{operation="RealPaymentScreen",outcome="ok"}`, 1},
		{"junk selecting REST fields is other", `paygraph_graphql_requests_total{operation="other",outcome="UNAUTHENTICATED"}`, junk / 2},
		{"junk selecting no REST field is other", `paygraph_graphql_requests_total{operation="other",outcome="ok"}`, junk / 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := m[tc.series]; got != tc.want {
				t.Errorf("%s = %v, want %v\n%s", tc.series, got, tc.want, grepLines(raw, "paygraph_graphql_requests_total"))
			}
		})
	}
	if strings.Contains(raw, `operation="Junk`) {
		t.Errorf("a junk name is a label:\n%s", grepLines(raw, "Junk"))
	}

	t.Run("the cap still holds for accepted callers", func(t *testing.T) {
		for i := range observe.MaxOperationNames + 5 {
			g.Post(t, creds(biz), fmt.Sprintf(`query Real%03d { payments(first: 1) { nodes { id } } }`, i), nil).WantNoErrors(t)
		}
		m, _ := scrape(t, g)
		names := map[string]bool{}
		for s := range m {
			if rest, ok := strings.CutPrefix(s, `paygraph_graphql_requests_total{operation="`); ok {
				names[rest[:strings.IndexByte(rest, '"')]] = true
			}
		}
		delete(names, observe.OperationOther)
		if len(names) != observe.MaxOperationNames {
			t.Errorf("%d operation labels besides other, want the cap %d", len(names), observe.MaxOperationNames)
		}
		if got := m[`paygraph_graphql_requests_total{operation="other",outcome="ok"}`]; got != junk/2+6 {
			t.Errorf("other/ok = %v, want %d (the junk and the 6 past the cap)", got, junk/2+6)
		}
	})
}
