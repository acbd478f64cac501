// Differential tests of the POST body's hand decoder (postdecode.go)
// against encoding/json: the same result, the same error or not, and the
// same bytes read from the body, on named cases and under the fuzzer.

package gqlhttp

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

// diffReader serves body in reads of at most chunk bytes (0: as much as
// asked), failing with failErr once more than failAt bytes are asked for
// (as http.MaxBytesReader does, with the bytes up to the limit); it counts
// what it served.
type diffReader struct {
	body    []byte
	chunk   int
	failAt  int // < 0: never
	failErr error
	served  int
	reads   []int
}

func (r *diffReader) Read(p []byte) (int, error) {
	r.reads = append(r.reads, len(p))
	if r.chunk > 0 && len(p) > r.chunk {
		p = p[:r.chunk]
	}
	if r.failAt >= 0 && r.served+len(p) > r.failAt {
		n := copy(p, r.body[r.served:min(len(r.body), r.failAt)])
		r.served += n
		return n, r.failErr
	}
	n := copy(p, r.body[r.served:])
	r.served += n
	if r.served == len(r.body) {
		return n, io.EOF
	}
	return n, nil
}

type decodeOutcome struct {
	req    postBody
	failed bool
	served int
	reads  []int
}

// decodeBoth decodes body with both decoders, each from a fresh reader.
func decodeBoth(body []byte, chunk, failAt int) (fast, ref decodeOutcome) {
	run := func(decode func(io.Reader, *postBody) error) decodeOutcome {
		r := &diffReader{body: body, chunk: chunk, failAt: failAt, failErr: errors.New("read failed")}
		var o decodeOutcome
		o.failed = decode(r, &o.req) != nil
		o.served, o.reads = r.served, r.reads
		return o
	}
	return run(decodePOST), run(decodePOSTJSON)
}

func checkSame(t *testing.T, body []byte, chunk, failAt int) {
	t.Helper()
	fast, ref := decodeBoth(body, chunk, failAt)
	if fast.failed != ref.failed || !reflect.DeepEqual(fast.req, ref.req) {
		t.Fatalf("body %q (chunk %d, fail at %d):\nhand:          failed=%v %#v\nencoding/json: failed=%v %#v",
			body, chunk, failAt, fast.failed, fast.req, ref.failed, ref.req)
	}
	if fast.served != ref.served {
		t.Fatalf("body %q (chunk %d, fail at %d): hand read %d bytes (%v), encoding/json %d (%v)",
			body, chunk, failAt, fast.served, fast.reads, ref.served, ref.reads)
	}
}

func TestDecodePOSTDifferential(t *testing.T) {
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
			body := []byte(tc.body)
			for _, chunk := range []int{0, 1, 7, 600} {
				for _, failAt := range []int{-1, 0, 10, len(body) / 2, len(body)} {
					checkSame(t, body, chunk, failAt)
				}
			}
		})
	}
}

// TestDecodePOSTFast: the common body is decoded by hand (it would pass
// the differential test above by always falling back).
func TestDecodePOSTFast(t *testing.T) {
	body := []byte(`{"query":"query Q($id: ID!) {\n payment(id: $id) { id } }","operationName":"Q","variables":{"id":"pay_1","n":[1,2.5]},"extensions":{"x":true}}`)
	var req postBody
	if st := decodeFast(body, &req); st != fastDone {
		t.Fatalf("decodeFast = %d, want fastDone", st)
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
		f.Add([]byte(s), uint8(0), int16(-1))
	}
	f.Fuzz(func(t *testing.T, body []byte, chunk uint8, failAt int16) {
		checkSame(t, body, int(chunk), int(failAt))
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
		decode func(io.Reader, *postBody) error
	}{{"hand", decodePOST}, {"encoding-json", decodePOSTJSON}} {
		b.Run(d.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				var req postBody
				if err := d.decode(bytes.NewReader(body), &req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestDecodePOSTReadsAsDecoder is the fence of what postdecode.go mirrors
// of encoding/json's Decoder (decoderMinRead and its buffer's growth): on
// a body decoded by hand, the reads asked of the body are the Decoder's,
// size for size. A Go release that reads otherwise fails here: re-verify
// the early stop (TestDecodePOSTDifferential's served bytes) and update
// decodePOST.
func TestDecodePOSTReadsAsDecoder(t *testing.T) {
	body := []byte(`{"query":"` + strings.Repeat("{ a }", 2000) + `","variables":{"id":"pay_1"}}`)
	for _, chunk := range []int{0, 100, 700} {
		fast, ref := decodeBoth(body, chunk, -1)
		if !reflect.DeepEqual(fast.reads, ref.reads) {
			t.Errorf("chunk %d: the hand decoder asked for reads of %v, encoding/json's Decoder %v", chunk, fast.reads, ref.reads)
		}
	}
}

// TestDecodePOSTResumesStrings: a query longer than the first reads
// (512 bytes, then 1,536: the Decoder's) is scanned once, each pass
// taking up where the last stopped (strResume). What the first pass
// found must carry over: a byte above ASCII (so that UTF-8 is checked),
// an escape (so that the string is unescaped), and a backslash that was
// the last byte read. Each against encoding/json, reads as the Decoder's
// and in small chunks.
func TestDecodePOSTResumesStrings(t *testing.T) {
	long := func(at int, s string) []byte {
		q := []byte(strings.Repeat("{ a }", 500)) // 2,500 bytes
		copy(q[at:], s)
		return []byte(`{"query":"` + string(q) + `","variables":{"id":"pay_1"}}`)
	}
	for _, tc := range []struct {
		name string
		body []byte
	}{
		{"invalid UTF-8 in the first read", long(100, "\xff")},
		{"valid UTF-8 in the first read", long(100, "é")},
		{"an escape in the first read", long(100, `\n`)},
		{"an escaped quote in the first read", long(100, `\"`)},
		{"a backslash as the first read's last byte", long(512-len(`{"query":"`)-1, `\n`)},
		{"a backslash as the second read's last byte", long(1536-len(`{"query":"`)-1, `\t`)},
		{"a control byte in the second read", long(1000, "\x01")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, chunk := range []int{0, 7, 100, 511} {
				checkSame(t, tc.body, chunk, -1)
			}
		})
	}
}
