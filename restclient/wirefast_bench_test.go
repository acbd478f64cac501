package restclient

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// wireDecoder is one way to decode a REST body into a wire struct.
type wireDecoder struct {
	name   string
	decode func(body []byte, into any) error
}

// wireDecoders: wirefast (with encoding/json behind it, as decodeBody
// does) and encoding/json alone; wirefast_jsonv2_test.go adds
// encoding/json/v2 when built with GOEXPERIMENT=jsonv2, where
// encoding/json itself runs on v2.
var wireDecoders = []wireDecoder{
	{"wirefast", func(body []byte, into any) error {
		if into.(fastDecoder).decodeFast(body) {
			return nil
		}
		return json.Unmarshal(body, into)
	}},
	{"encoding-json", json.Unmarshal},
}

// BenchmarkWireDecode: wirefast against the standard library on the two
// hot bodies (a 100-item page, a payment's detail), the decode alone
// (not the conversion into exported types, which is the same for all).
// wirefast.go's deletion criterion reads these figures:
//
//	go test -run '^$' -bench WireDecode -benchmem ./restclient
//	GOEXPERIMENT=jsonv2 go test -run '^$' -bench WireDecode -benchmem ./restclient
func BenchmarkWireDecode(b *testing.B) {
	for _, body := range []struct {
		name string
		path string
		new  func() any
	}{
		{"page100", "/api/v1/payments?limit=100", func() any { return new(wirePage) }},
		{"detail", "", func() any { return new(wirePayment) }},
	} {
		data := sandboxBody(b, body.path)
		for _, d := range wireDecoders {
			b.Run(body.name+"/"+d.name, func(b *testing.B) {
				b.SetBytes(int64(len(data)))
				b.ReportAllocs()
				for b.Loop() {
					if err := d.decode(data, body.new()); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// TestWireDecodersAgree: every decoder the benchmark compares decodes the
// sandbox's bodies to the same wire structs (else the figures compare
// different work).
func TestWireDecodersAgree(t *testing.T) {
	t.Parallel()
	for _, body := range []struct {
		name string
		path string
		new  func() any
	}{
		{"page100", "/api/v1/payments?limit=100", func() any { return new(wirePage) }},
		{"detail", "", func() any { return new(wirePayment) }},
	} {
		data := sandboxBody(t, body.path)
		want := body.new()
		if err := json.Unmarshal(data, want); err != nil {
			t.Fatal(err)
		}
		for _, d := range wireDecoders {
			t.Run(body.name+"/"+d.name, func(t *testing.T) {
				t.Parallel()
				got := body.new()
				if err := d.decode(data, got); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, got, cmp.AllowUnexported(errField{}, wirePayment{})); diff != "" {
					t.Errorf("(-encoding/json +%s):\n%s", d.name, diff)
				}
			})
		}
	}
}
