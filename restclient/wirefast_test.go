package restclient

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// fastVsJSON decodes body with the fast path and with json.Unmarshal into
// fresh values of the same wire struct. It reports whether the fast path
// took the body, and fails the test if it did and disagrees with
// encoding/json, or if it gave up without leaving its value zero.
func fastVsJSON[T any, P interface {
	*T
	fastDecoder
}](t *testing.T, body []byte) bool {
	t.Helper()
	var fast, slow T
	took := P(&fast).decodeFast(body)
	err := json.Unmarshal(body, &slow)
	if !took {
		var zero T
		if !reflect.DeepEqual(fast, zero) {
			t.Fatalf("gave up on %q but left %+v", body, fast)
		}
		return false
	}
	if err != nil {
		t.Fatalf("fast path took %q, which encoding/json refuses: %v", body, err)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("body %q:\nfast %#v\njson %#v", body, fast, slow)
	}
	return true
}

// boxedVsJSON is fastVsJSON for a payment decoded as GetPayment decodes
// it: its nullable strings in the box's own block (paymentBox).
func boxedVsJSON(t *testing.T, body []byte) {
	t.Helper()
	var b paymentBox
	b.w.strings = &b.strings
	took := b.w.decodeFast(body)
	var slow wirePayment
	err := json.Unmarshal(body, &slow)
	if !took {
		if !reflect.DeepEqual(b.w, wirePayment{}) {
			t.Fatalf("gave up on %q but left %+v", body, b.w)
		}
		return
	}
	b.w.strings = nil
	if err != nil || !reflect.DeepEqual(b.w, slow) {
		t.Fatalf("body %q (in a box):\nfast %#v\njson %#v (%v)", body, b.w, slow, err)
	}
}

// FuzzFastDecodeMatchesJSON: whatever the body, the fast path either
// gives up (and decodeBody falls back to json.Unmarshal) or decodes
// exactly what json.Unmarshal decodes, for a payment and for a page.
func FuzzFastDecodeMatchesJSON(f *testing.F) {
	for _, s := range fastDecodeSeeds {
		f.Add([]byte(s))
	}
	// Small real bodies: a large seed slows every mutation (the 100-item
	// page is in TestFastDecode).
	f.Add(sandboxBody(f, "/api/v1/payments?limit=3"))
	f.Add(sandboxBody(f, ""))
	f.Fuzz(func(t *testing.T, body []byte) {
		fastVsJSON[wirePayment](t, body)
		fastVsJSON[wirePage](t, body)
		boxedVsJSON(t, body)
	})
}

var fastDecodeSeeds = []string{
	paymentBody, listBody,
	`{"id":"p","status":"PENDING","amount":12.5,"customer":{"name":"A","email":null,"phone":""}}`,
	`{"data":[],"has_more":false,"next_cursor":null}`,
	`{"data":null,"has_more":true,"next_cursor":""}`,
	`{"data":[null]}`,
	`{"data":[{"id":"a"},{"id":"b","customer":null}],"has_more":true,"next_cursor":"c"}`,
	`{"id":"p","amount":"1e2"}`,
	`{"ID":"p"}`, `{"Id":"p"}`, `{"ſtatus":"PENDING"}`, `{"i\u0064":"p"}`,
	`{"id":"p","id":"q"}`,
	`{"id":"p","customer":{"name":"a"},"customer":{"email":"b"}}`,
	`{"id":"p"} `, `{"id":"p"} x`, `{"id":"p"}{}`, ` {"id":"p"}`, `null`, `[]`, `"x"`, ``,
	`{"id":"Nazrul \"Bulbul\" Islam \u0026 \u003cSons\u003e \ud83d\ude42 \ud800 \/"}`,
	"{\"id\":\"r\xc3\xa9 \xff\xfe\"}",
	"{\"id\":\"a\tb\"}",
	`{"id":"p","extra":{"a":[1,2.5e-3,-0,true,false,null,{"b":"\u00e9"}]},"more":[]}`,
	`{"id":"p","amount":01}`, `{"id":"p","amount":-}`, `{"id":"p","amount":1.}`, `{"id":"p","amount":1e}`,
	`{"id":"p","amount":-0.5E+7}`,
	`{"id":7}`, `{"id":true}`, `{"amount":true}`, `{"currency":5}`, `{"has_more":"yes"}`,
	`{"error":"Payment not found"}`, `{"error":7}`, `{"error":{"message":"x"}}`, `{"error":null}`,
	`{"id":"p","created_at":"2026-11-21T09:30:00.000Z","updated_at":null}`,
	`{"a":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`,
	`{"a":` + strings.Repeat("[", 60) + strings.Repeat("]", 60) + `}`,
	"{\"id\":\"p\"\n,\r\"status\"\t:\"FAILED\"}",
}

// TestFastDecode pins what the fast path takes and what it leaves to
// encoding/json (the fuzz target checks that the values agree).
func TestFastDecode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		body string
		page bool
		take bool
	}{
		{"documented payment", paymentBody, false, true},
		{"documented page", listBody, true, true},
		{"sandbox page of 100", string(sandboxBody(t, "/api/v1/payments?limit=100")), true, true},
		{"sandbox payment", string(sandboxBody(t, "")), false, true},
		{"escaped and non-ASCII strings", `{"id":"a \"b\" \u0026 রবীন্দ্রনাথ 🙂"}`, false, true},
		{"invalid UTF-8 in a string", "{\"id\":\"\xff\"}", false, true},
		{"nulls", `{"id":"p","amount":null,"currency":null,"customer":null,"created_at":null}`, false, true},
		{"error body", `{"error":"Payment not found"}`, false, true},
		{"error of another type", `{"error":{"code":1}}`, true, true},
		{"empty data", `{"data":[],"has_more":false}`, true, true},
		{"unknown keys", `{"id":"p","extra":[{"x":null}],"z":1}`, false, true},
		{"quoted amount", `{"id":"p","amount":"12.50"}`, false, false},
		{"key in another case", `{"Id":"p"}`, false, false},
		{"key with an escape", `{"i\u0064":"p"}`, false, false},
		{"duplicate key", `{"id":"p","id":"q"}`, false, false},
		{"null item", `{"data":[null]}`, true, false},
		{"wrong type", `{"id":7}`, false, false},
		{"trailing data", `{"id":"p"} {}`, false, false},
		{"not an object", `[]`, false, false},
		{"invalid number", `{"amount":01}`, false, false},
		{"control character in a string", "{\"id\":\"a\nb\"}", false, false},
		{"deeper than the fast path follows", `{"a":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var took bool
			if tc.page {
				took = fastVsJSON[wirePage](t, []byte(tc.body))
			} else {
				took = fastVsJSON[wirePayment](t, []byte(tc.body))
			}
			if took != tc.take {
				t.Errorf("fast path took it: %v, want %v", took, tc.take)
			}
		})
	}
}

// TestDecodeBodyFallsBack: a body the fast path leaves alone still
// decodes (and fails) exactly as before, through decodeBody.
func TestDecodeBodyFallsBack(t *testing.T) {
	t.Parallel()
	var w wirePayment
	if err := decodeForTest([]byte(`{"id":"p","amount":"12.50","ID":"q"}`), &w); err != nil || w.ID != "q" || w.Amount != "12.50" {
		t.Fatalf("got %+v, %v", w, err)
	}
	var p wirePage
	err := decodeForTest([]byte(`{"data":[{"id":7}]}`), &p)
	if err == nil || describeDecodeError(err).Error() != "data.id is not a JSON string" {
		t.Fatalf("got %v (%v)", err, describeDecodeError(err))
	}
}

// TestFastDecodeKnowsEveryField: the fast path's key lists are the wire
// structs' JSON names, so a field added to a wire struct cannot be
// skipped as unknown by the fast path while encoding/json fills it.
func TestFastDecodeKnowsEveryField(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		typ  reflect.Type
		keys []string
	}{
		{"wirePayment", reflect.TypeFor[wirePayment](), paymentKeys},
		{"wirePage", reflect.TypeFor[wirePage](), pageKeys},
		{"wireCustomer", reflect.TypeFor[wireCustomer](), customerKeys},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var tags []string
			for f := range tc.typ.Fields() {
				if !f.IsExported() { // encoding/json leaves it alone
					continue
				}
				name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
				tags = append(tags, name)
			}
			if !reflect.DeepEqual(tags, tc.keys) {
				t.Errorf("JSON names %q, fast path knows %q", tags, tc.keys)
			}
		})
	}
}

// TestPlainByte: every byte in a string between two plain ones decodes by
// the fast path exactly as encoding/json decodes it (or is left to it).
func TestPlainByte(t *testing.T) {
	t.Parallel()
	for c := 0; c < 256; c++ {
		if want := c >= 0x20 && c < 0x80 && c != '"' && c != '\\'; plainByte[c] != want {
			t.Errorf("plainByte[%#x] = %v, want %v", c, plainByte[c], want)
		}
		body := []byte(`{"id":"a` + string([]byte{byte(c)}) + `b","status":"x` + string([]byte{byte(c)}) + `"}`)
		var fast wirePayment
		ok := fast.decodeFast(body)
		var std wirePayment
		err := json.Unmarshal(body, &std)
		switch {
		case ok && err != nil:
			t.Errorf("byte %#x: the fast path decoded a body encoding/json refuses (%v)", c, err)
		case ok && (fast.ID != std.ID || fast.Status != std.Status):
			t.Errorf("byte %#x: fast %q %q, encoding/json %q %q", c, fast.ID, fast.Status, std.ID, std.Status)
		}
	}
}

// TestPlainRun: plainRun stops at exactly the first byte that is not
// plain, whatever byte it is, wherever it is in its eight, and whatever
// follows it (the bit tricks' borrows only reach the bytes above), as a
// loop over plainByte does.
func TestPlainRun(t *testing.T) {
	t.Parallel()
	byLoop := func(b []byte, j int) int {
		for j < len(b) && plainByte[b[j]] {
			j++
		}
		return j
	}
	rnd := rand.New(rand.NewPCG(25, 26))
	for c := 0; c < 256; c++ {
		for at := 0; at < 19; at++ {
			for _, after := range []string{"", "aaaaaaaaaaaaaaaa", "\x00\x00\x00\x00\x00\x00\x00\x00", "\"\\\x1f\x80\xff\x20\x7f\x21"} {
				b := append(append(bytes.Repeat([]byte{'a'}, at), byte(c)), after...)
				// and random plain or special bytes around, at random starts
				for k := range b {
					if k != at && rnd.IntN(4) == 0 {
						b[k] = byte(rnd.IntN(256))
					}
				}
				for start := 0; start <= len(b); start++ {
					s := scanner{src: string(b), b: b}
					if got, want := s.plainRun(start), byLoop(b, start); got != want {
						t.Fatalf("plainRun(%q, %d) = %d, want %d", b, start, got, want)
					}
				}
			}
		}
	}
}
