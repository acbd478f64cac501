package gateway_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestScalarsSpecifiedBy: introspection gives DateTime its standard (RFC
// 3339's date-time), so that code generators and clients can map it; the
// scalars without one (Decimal, SafeInt: docs/clients.md's codegen mapping) have
// none.
func TestScalarsSpecifiedBy(t *testing.T) {
	t.Parallel()
	g := startGateway(t, setup{})
	resp := g.Post(t, creds(g.Biz[0]), `{
		dateTime: __type(name: "DateTime") { specifiedByURL }
		decimal: __type(name: "Decimal") { specifiedByURL }
		safeInt: __type(name: "SafeInt") { specifiedByURL }
	}`, nil).WantNoErrors(t)
	var got map[string]struct{ SpecifiedByURL *string }
	if err := json.Unmarshal(resp.Data, &got); err != nil {
		t.Fatal(err)
	}
	url := func(m map[string]struct{ SpecifiedByURL *string }, k string) string {
		if m[k].SpecifiedByURL == nil {
			return ""
		}
		return *m[k].SpecifiedByURL
	}
	want := map[string]string{"dateTime": "https://datatracker.ietf.org/doc/html/rfc3339#section-5.6", "decimal": "", "safeInt": ""}
	gotURLs := map[string]string{}
	for k := range want {
		gotURLs[k] = url(got, k)
	}
	if diff := cmp.Diff(want, gotURLs); diff != "" {
		t.Errorf("specifiedByURL (-want +got):\n%s", diff)
	}
}
