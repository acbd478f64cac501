package gateway_test

import (
	"cmp"
	"slices"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"paygraph/internal/gqltest"
)

// TestFieldErrorsHaveLocations: every field error points at the field of
// the query that failed, including the per-id errors of nodes(ids), which
// the resolver adds itself rather than gqlgen.
func TestFieldErrorsHaveLocations(t *testing.T) {
	t.Parallel()
	g := startGateway(t, setup{})
	h := creds(g.Biz[0])
	for _, tc := range []struct {
		name, query string
		want        []gqltest.Location
	}{
		{"payment", "{\n  payment(id: \"pay_nope\") { id }\n}", []gqltest.Location{{Line: 2, Column: 3}}},
		{"node", "{ node(id: \"pl_nope\") { id } }", []gqltest.Location{{Line: 1, Column: 3}}},
		{"nodes, one error per id", "{\n  a: payment(id: \"pay_nope\") { id }\n    nodes(ids: [\"pay_nope\", \"pl_nope\", \"not an id\"]) { id }\n}",
			[]gqltest.Location{{Line: 2, Column: 3}, {Line: 3, Column: 5}, {Line: 3, Column: 5}, {Line: 3, Column: 5}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := g.Post(t, h, tc.query, nil)
			var got []gqltest.Location
			for _, e := range resp.Errors {
				if len(e.Locations) != 1 {
					t.Errorf("error %q has locations %v", e.Message, e.Locations)
					continue
				}
				got = append(got, e.Locations[0])
			}
			// Fields resolve concurrently: errors come in any order.
			slices.SortFunc(got, func(a, b gqltest.Location) int { return cmp.Compare(a.Line*1000+a.Column, b.Line*1000+b.Column) })
			if diff := gocmp.Diff(tc.want, got); diff != "" {
				t.Errorf("locations (-want +got):\n%s", diff)
			}
		})
	}
}
