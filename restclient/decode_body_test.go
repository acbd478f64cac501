package restclient

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"testing"
)

// decodeBody answers exactly as the json.Decoder it replaces: the same
// value or the same error, whatever the body.
func TestDecodeBodyLikeDecoder(t *testing.T) {
	t.Parallel()
	readFail := errors.New("connection reset")
	for _, tc := range []struct {
		body string
		fail bool // the body's reader fails after the body
	}{
		{body: `{"id":"p","status":"PENDING","amount":12.5,"customer":{"name":"A"}}`},
		{body: `{"id":"p"} trailing garbage`},
		{body: `{"id":"p"}{"id":"q"}`},
		{body: ``},
		{body: `   `},
		{body: `{"id":"p","amount":`},
		{body: `{"id":7}`},
		{body: `{"id":"p","amount":"1e2"}`},
		{body: `{"id":"p","amount":"x"}`},
		{body: `[1,2]`},
		{body: `{"id":"p"`, fail: true},
		{body: `{"id":"p"}`, fail: true},
		{body: `nul`},
	} {
		reader := func() io.Reader {
			var r io.Reader = bytes.NewReader([]byte(tc.body))
			if tc.fail {
				r = io.MultiReader(r, errReader{readFail})
			}
			return r
		}
		var want, got wirePayment
		dec := json.NewDecoder(reader())
		dec.UseNumber()
		wantErr := dec.Decode(&want)
		gotErr := decodeBody(&limitedReader{r: reader(), n: DefaultMaxBodyBytes}, &got, -1, nil)
		if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gotErr, wantErr) {
			t.Errorf("body %q (fail %v):\n got %+v, %v\nwant %+v, %v", tc.body, tc.fail, got, gotErr, want, wantErr)
		}
	}
}
