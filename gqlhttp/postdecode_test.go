// Differential tests of the POST body's hand decoder (postdecode.go)
// against encoding/json: the same result and the same error or not, on
// named cases and under the fuzzer.

package gqlhttp

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

type decodeOutcome struct {
	req    postBody
	failed bool
}

func checkSame(t *testing.T, body []byte) {
	t.Helper()
	var fast, ref decodeOutcome
	fast.failed = decodePOST(body, &fast.req) != nil
	ref.failed = decodePOSTJSON(body, &ref.req) != nil
	if fast.failed != ref.failed || !reflect.DeepEqual(fast.req, ref.req) {
		t.Fatalf("body %q:\nhand:          failed=%v %#v\nencoding/json: failed=%v %#v",
			body, fast.failed, fast.req, ref.failed, ref.req)
	}
}

func TestDecodePOSTDifferential(t *testing.T) {
	t.Parallel()
	long := `{"query":"` + strings.Repeat("{ a }", 400) + `","variables":{"id":"pay_1"}}`
	for _, tc := range []struct{ name, body string }{
		{"query only", `{"query":"{ a }"}`},
		{"all members", `{"query":"query Q($id: ID!) { payment(id: $id) { id } }","operationName":"Q","variables":{"id":"pay_1"},"extensions":{"persistedQuery":{"version":1,"sha256Hash":"ab"}},"documentId":"d1"}`},
		{"blanks everywhere", " \t\r\n{ \"query\" : \"{ a }\" ,\n \"variables\" : { \"a\" : [ 1 , 2 ] } } \n"},
		{"escapes", `{"query":"query {\n\ta\r\n}\"\\\/\b\f"}`},
		{"unicode escape", `{"query":"\u0061"}`},
		{"surrogate pair", `{"query":"\ud83d\ude00"}`},
		{"lone surrogate", `{"query":"\ud83d"}`},
		{"multibyte UTF-8", `{"query":"{ a } # żółw 🐢"}`},
		{"invalid UTF-8", "{\"query\":\"\xff\xfe\"}"},
		{"invalid UTF-8 in variables", "{\"variables\":{\"a\":\"\xc3\"}}"},
		{"control character", "{\"query\":\"a\x01\"}"},
		{"empty object", `{}`},
		{"empty body", ``},
		{"blank body", "  \n"},
		{"null body", `null`},
		{"string body", `"query"`},
		{"number body", `12`},
		{"array body", `[{"query":"{ a }"}]`},
		{"empty array body", `[]`},
		{"true body", `true`},
		{"truncated", `{"query":"{ a }"`},
		{"truncated in string", `{"query":"{ a`},
		{"truncated in variables", `{"variables":{"a":[1,`},
		{"trailing garbage", `{"query":"{ a }"} xyz`},
		{"trailing object", `{"query":"{ a }"}{"query":"{ b }"}`},
		{"trailing comma", `{"query":"{ a }",}`},
		{"missing colon", `{"query" "{ a }"}`},
		{"single quotes", `{'query':'{ a }'}`},
		{"duplicate query", `{"query":"{ a }","query":"{ b }"}`},
		{"duplicate query, then null", `{"query":"{ a }","query":null}`},
		{"duplicate variables merge", `{"variables":{"a":1,"b":2},"variables":{"b":3,"c":4}}`},
		{"variables, then null", `{"variables":{"a":1},"variables":null}`},
		{"null members", `{"query":null,"operationName":null,"variables":null,"extensions":null,"documentId":null}`},
		{"query a number", `{"query":1}`},
		{"query an object", `{"query":{}}`},
		{"query true", `{"query":true}`},
		{"variables a string", `{"variables":"{}"}`},
		{"variables an array", `{"variables":[]}`},
		{"extensions a number", `{"extensions":1}`},
		{"documentId a number", `{"documentId":7}`},
		{"unknown member", `{"query":"{ a }","foo":{"bar":[1,"x",null]}}`},
		{"headers member", `{"query":"{ a }","headers":{"x":["y"]}}`},
		{"headers member of wrong type", `{"query":"{ a }","headers":1}`},
		{"case-folded key", `{"QUERY":"{ a }"}`},
		{"kelvin-folded key", "{\"operationName\":\"a\",\"variables\":{},\"extensions\":{},\"documentId\":\"\u212a\"}"},
		{"long-s key", "{\"variable\u017f\":{\"a\":1}}"},
		{"escaped key", `{"\u0071uery":"{ a }"}`},
		{"numbers", `{"variables":{"a":0,"b":-0,"c":1.5,"d":-12e+3,"e":1E-2,"f":12345678901234567890123,"g":0.0}}`},
		{"bad numbers", `{"variables":{"a":01}}`},
		{"bad number dot", `{"variables":{"a":1.}}`},
		{"bad number exponent", `{"variables":{"a":1e}}`},
		{"bad number plus", `{"variables":{"a":+1}}`},
		{"bad number minus", `{"variables":{"a":-}}`},
		{"literals", `{"variables":{"a":true,"b":false,"c":null,"d":[true,false,null]}}`},
		{"bad literal", `{"variables":{"a":tru}}`},
		{"nested", `{"variables":{"a":{"b":{"c":[[],{},[{}]]}}}}`},
		{"duplicate nested key", `{"variables":{"a":{"b":1,"b":2}}}`},
		{"deep nesting", `{"variables":{"a":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}}`},
		{"too deep", `{"variables":{"a":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}}`},
		{"long query", long},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkSame(t, []byte(tc.body))
		})
	}
}

// TestDecodePOSTFast: the common body is decoded by hand (it would pass
// the differential test above by always falling back).
func TestDecodePOSTFast(t *testing.T) {
	t.Parallel()
	body := []byte(`{"query":"query Q($id: ID!) {\n payment(id: $id) { id } }","operationName":"Q","variables":{"id":"pay_1","n":[1,2.5]},"extensions":{"x":true}}`)
	var req postBody
	if !decodeFast(body, &req) {
		t.Fatal("decodeFast left the common body to encoding/json")
	}
	want := postBody{}
	if err := json.Unmarshal(body, &want); err != nil {
		t.Fatal(err)
	}
	if req.Variables["n"].([]any)[0] != json.Number("1") {
		t.Errorf("a number is %#v, want json.Number", req.Variables["n"].([]any)[0])
	}
	if req.Query != want.Query || req.OperationName != "Q" || req.Variables["id"] != "pay_1" || req.Extensions["x"] != true {
		t.Errorf("decoded %#v", req)
	}
}

// TestDecodePOSTKeepsNoBodyBytes: the body's buffer goes back to the pool
// (and to the next caller's body) once decoded, so nothing decoded may
// point into it: overwriting the buffer changes nothing decoded, by hand
// or by encoding/json.
func TestDecodePOSTKeepsNoBodyBytes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, body string }{
		{"by hand", `{"query":"query Q($id: ID!) { payment(id: $id) { id } }","operationName":"Q","documentId":"d1","variables":{"id":"pay_1","k":{"n":[1,"x"]}},"extensions":{"e":"v"}}`},
		{"by hand, escapes", `{"query":"{\n a }","variables":{"s":"a\"b"}}`},
		{"by encoding/json", `{"query":"\u0061","operationName":"Q","variables":{"id":"pay_1"},"extensions":{"e":"v"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			body := []byte(tc.body)
			var got, want postBody
			if err := decodePOST(body, &got); err != nil {
				t.Fatal(err)
			}
			if err := decodePOSTJSON([]byte(tc.body), &want); err != nil {
				t.Fatal(err)
			}
			for i := range body {
				body[i] = 'x'
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("after the body's buffer was overwritten, decoded %#v, want %#v", got, want)
			}
		})
	}
}

func FuzzDecodePOST(f *testing.F) {
	for _, s := range []string{
		`{"query":"{ a }","variables":{"id":"pay_1","n":[1,2.5e3,null,true]},"operationName":"Q","extensions":{},"documentId":"d"}`,
		`{"query":"a\nb\u0061","variables":{"a":{"b":-0.5}}}`,
		`{"variables":{"a":1},"variables":{"b":2}}`,
		`[{"query":"{ a }"}]`, `null`, `{"QUERY":"x"}`, "{\"query\":\"\xff\"}",
		// str's eight-bytes-at-a-time scan: a stop byte (quote, backslash,
		// control, non-ASCII) at each place in a word and across words.
		`{"query":"query Q { payment(id: \"pay_1\") { id status } }\\"}`,
		"{\"query\":\"0123456\\n89abcdef\\\"xyz\u00e9\u00e9 01234567\"}",
		"{\"query\":\"01234567\x1f9abcdef\"}", "{\"query\":\"0123456789abcde\\",
		"{\"query\":\"0123456789abc\xe2\x80\xa8 0123456789\xc3\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkSame(t, body)
	})
}

func BenchmarkDecodePOST(b *testing.B) {
	var q bytes.Buffer
	q.WriteString("query Q($id: ID!) {")
	for i := range 20 {
		q.WriteString(" a")
		q.WriteByte(byte('a' + i))
		q.WriteString(": payment(id: $id) { id status amount { amount currency } customer { name } }")
	}
	q.WriteString(" }")
	body, _ := json.Marshal(map[string]any{"query": q.String(), "variables": map[string]any{"id": "pay_123456789"}})
	for _, d := range []struct {
		name   string
		decode func([]byte, *postBody) error
	}{{"hand", decodePOST}, {"encoding-json", decodePOSTJSON}} {
		b.Run(d.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				var req postBody
				if err := d.decode(body, &req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
