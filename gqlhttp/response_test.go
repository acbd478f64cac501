package gqlhttp

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/99designs/gqlgen/graphql"
)

// writeResponse writes gqlgen's data as it is when json.Marshal would
// write the same bytes, and takes json.Marshal's path otherwise: the body
// is byte for byte what json.Marshal(resp) gives.
func TestWriteResponseSameAsMarshal(t *testing.T) {
	for _, data := range []string{
		`{"payment":{"id":"pay_1","amount":{"amount":"12.50"}}}`,
		`{"payment":null}`,
		`{"a":"x<y & z>w"}`,
		`{"a":"line\u2028sep\u2029"}`,
		"{\"a\":\"bad \xff utf8\"}",
		`{"a":"esc \" \\ \n \u003c"}`,
		`{"a": "spaced"}`,
		`{"a":"ünïcödé ✓ 💳"}`,
		`[1,2,3]`,
	} {
		for _, ext := range []map[string]any{nil, {}} { // gqlgen hands an empty map
			resp := &graphql.Response{Data: json.RawMessage(data), Extensions: ext}
			want, err := json.Marshal(resp)
			if err != nil {
				want = []byte(`{"errors":[{"message":"internal error","extensions":{"code":"INTERNAL_SERVER_ERROR"}}]}`)
			}
			var got bytes.Buffer
			writeResponse(&got, resp, 0)
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("data %q:\n got %s\nwant %s", data, got.Bytes(), want)
			}
		}
	}
}
