//go:build goexperiment.jsonv2

package restclient

import jsonv2 "encoding/json/v2"

// With GOEXPERIMENT=jsonv2 the wirefast benchmark also decodes with
// encoding/json/v2 (its default options: what a switch to v2 would use).
func init() {
	wireDecoders = append(wireDecoders, wireDecoder{"json-v2", func(body []byte, into any) error {
		return jsonv2.Unmarshal(body, into)
	}})
}
