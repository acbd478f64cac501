package gqlhttp

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/graphql"
)

// marshalled is what json.Marshal writes for a response with data.
func marshalled(t testing.TB, data []byte) []byte {
	t.Helper()
	want, err := json.Marshal(&graphql.Response{Data: json.RawMessage(data)})
	if err != nil {
		t.Fatalf("json.Marshal(%q): %v", data, err)
	}
	return want
}

// The one-pass writer gives json.Marshal's bytes for every shape of valid
// data: what it escapes, what it drops, what it passes through.
func TestAppendMarshalledSameAsMarshal(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, data string }{
		{"plain", `{"payment":{"id":"pay_1","amount":{"amount":"12.50"}}}`},
		{"null", `{"payment":null}`},
		{"sandbox customer", `{"customer":{"name":"Back\\Slash & <Sons>"}}`},
		{"html only", `{"a":"<>&"}`},
		{"escape at both ends", `{"a":"&","b":">"}`},
		{"line and paragraph separators", `{"a":"line` + "\u2028" + `sep` + "\u2029" + `"}`},
		{"other E2 runes", `{"a":"€ – ‘q’ ✓"}`},
		{"invalid UTF-8 passes", "{\"a\":\"bad \xff\xe2\x80 utf8\"}"},
		{"escaped quote then html", `{"a":"say \"<hi>\" \\","b":"&"}`},
		{"escaped backslash before quote", `{"a":"\\\\","b":"<"}`},
		{"unicode escapes kept", `{"a":"\u003c \u2028 \ud83d\udcb3"}`},
		{"whitespace between tokens", "{ \"a\" :\t[1 ,\n2]\r, \"b\": \"x y\" }"},
		{"whitespace only in strings", `{"a":" spaced \t out "}`},
		{"multibyte", `{"a":"ünïcödé ✓ 💳"}`},
		{"array", `[1,2,3]`},
		{"numbers and literals", `{"n":-1.5e3,"t":true,"f":false,"z":null}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if !json.Valid([]byte(tt.data)) {
				t.Fatalf("test data is not valid JSON: %q", tt.data)
			}
			want := marshalled(t, []byte(tt.data))
			var got bytes.Buffer
			writeAnswer(&got, &graphql.Response{Data: json.RawMessage(tt.data), Extensions: map[string]any{}}, 0, false)
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("\n got %s\nwant %s", got.Bytes(), want)
			}
		})
	}
}

// The escaped response is measured against MAX_RESPONSE_BYTES as written:
// data that fits before escaping and not after is refused.
func TestWriteResponseLimitCountsEscapes(t *testing.T) {
	t.Parallel()
	data := []byte(`{"a":"<<<<"}`)
	body := marshalled(t, data) // {"data":{"a":"\u003c\u003c\u003c\u003c"}}
	for _, tt := range []struct {
		name     string
		max      int64
		tooLarge bool
	}{
		{"exactly the escaped size", int64(len(body)), false},
		{"one byte short", int64(len(body)) - 1, true},
		{"no limit", 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got bytes.Buffer
			writeAnswer(&got, &graphql.Response{Data: data}, tt.max, false)
			refused := bytes.Contains(got.Bytes(), []byte("RESPONSE_TOO_LARGE"))
			if refused != tt.tooLarge {
				t.Errorf("max %d: got %s", tt.max, got.Bytes())
			}
			if !refused && !bytes.Equal(got.Bytes(), body) {
				t.Errorf("got %s, want %s", got.Bytes(), body)
			}
		})
	}
}

// FuzzAppendMarshalled: for any valid JSON data, the response written is
// byte for byte json.Marshal's (scripts/fuzz.sh runs it).
func FuzzAppendMarshalled(f *testing.F) {
	for _, s := range []string{
		`{"customer":{"name":"Back\\Slash & <Sons>"}}`,
		"{\"a\":\"\u2028\u2029\"}",
		"{ \"a\" : [ 1 , \"<\" ] }",
		"{\"a\":\"\xff\xe2\x80\"}",
		`{"a":"\"\\<"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 || !json.Valid(data) {
			return // gqlgen's data is always valid JSON
		}
		want := marshalled(t, data)
		var got bytes.Buffer
		writeAnswer(&got, &graphql.Response{Data: data}, 0, false)
		if !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("data %q:\n got %s\nwant %s", data, got.Bytes(), want)
		}
	})
}

// FuzzAppendHTMLSafe: for compact JSON data (what the root fast path
// writes: gqlgen's strings, nothing between tokens), the answer written
// when it is known compact is byte for byte json.Marshal's. The data is
// the fuzzer's JSON compacted, and its bytes as one of gqlgen's strings
// (graphql.MarshalString), so that every byte and every split of U+2028
// across eight-byte words is tried inside a string.
func FuzzAppendHTMLSafe(f *testing.F) {
	for _, s := range []string{
		`{"customer":{"name":"Back\\Slash & <Sons>"}}`,
		"{\"a\":\"\u2028\u2029\"}",
		"{ \"a\" : [ 1 , \"<\" ] }",
		"{\"a\":\"\xff\xe2\x80\"}",
		"1234567\xe2\x80\xa8 split across words",
		`{"a":"\"\\<"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var gq bytes.Buffer
		gq.WriteString(`{"s":`)
		graphql.MarshalString(string(in)).MarshalGQL(&gq)
		gq.WriteString(`,"n":[1,true,null]}`)
		datas := [][]byte{gq.Bytes()}
		var compact bytes.Buffer
		if json.Valid(in) && json.Compact(&compact, in) == nil && compact.Len() > 0 {
			datas = append(datas, compact.Bytes())
		}
		for _, data := range datas {
			want := marshalled(t, data)
			var got bytes.Buffer
			writeAnswer(&got, &graphql.Response{Data: data}, 0, true)
			if !bytes.Equal(got.Bytes(), want) {
				t.Fatalf("data %q:\n got %s\nwant %s", data, got.Bytes(), want)
			}
		}
	})
}

func BenchmarkWriteResponseEscaped(b *testing.B) {
	item := `{"id":"pay_0123456789","status":"PAID","amount":{"amount":"12.50","paisa":"1250","currency":"BDT"},"customer":{"name":"Back\\Slash & <Sons>","email":"a@b.c"},"createdAt":"2026-01-01T00:00:00Z"},`
	data := []byte(`{"payments":{"nodes":[` + string(bytes.Repeat([]byte(item), 100)))
	data = append(data[:len(data)-1], `]}}`...)
	resp := &graphql.Response{Data: data}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		writeAnswer(io.Discard, resp, 0, false)
	}
}

// BenchmarkAppendMarshalled: the reason appendMarshalled exists, measured
// against what it replaces (json.Marshal of the whole response, which
// re-validates and compacts gqlgen's encoded data into a copy), on one
// payment and on a 100-item page whose texts hold '&' and '<' (as the
// sandbox's do). Figures beside appendMarshalled in response.go.
//
//	go test -run '^$' -bench AppendMarshalled -benchmem ./gqlhttp
func BenchmarkAppendMarshalled(b *testing.B) {
	item := `{"id":"pay_0123456789","status":"SUCCEEDED","amount":{"amount":"12.50","paisa":1250,"currency":"BDT"},"customer":{"name":"Rafiq & <Sons>","email":"a@b.c","address":"House 1, Road 2"},"createdAt":"2026-01-01T00:00:00.000Z"}`
	page := []byte(`{"payments":{"nodes":[` + strings.TrimSuffix(strings.Repeat(item+",", 100), ",") + `]}}`)
	for _, d := range []struct {
		name string
		data []byte
	}{{"single", []byte(`{"payment":` + item + `}`)}, {"page100", page}} {
		resp := &graphql.Response{Data: d.data}
		b.Run(d.name+"/appendMarshalled", func(b *testing.B) {
			b.SetBytes(int64(len(d.data)))
			b.ReportAllocs()
			for b.Loop() {
				writeAnswer(io.Discard, resp, 0, false)
			}
		})
		b.Run(d.name+"/appendHTMLSafe", func(b *testing.B) {
			b.SetBytes(int64(len(d.data)))
			b.ReportAllocs()
			for b.Loop() {
				writeAnswer(io.Discard, resp, 0, true)
			}
		})
		b.Run(d.name+"/json.Marshal", func(b *testing.B) {
			b.SetBytes(int64(len(d.data)))
			b.ReportAllocs()
			for b.Loop() {
				out, err := json.Marshal(resp)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Discard.Write(out)
			}
		})
	}
}
