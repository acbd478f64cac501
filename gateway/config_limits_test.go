package gateway

import (
	"strings"
	"testing"
)

// TestConfigPerMerchantLimit: REST_MAX_INFLIGHT_PER_MERCHANT is a share of
// REST_MAX_INFLIGHT: 1 to it when given, and the default shrinks to a
// smaller pool.
func TestConfigPerMerchantLimit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		args    []string
		want    int
		wantErr bool
	}{
		{name: "default", want: 64},
		{name: "default in a small pool", env: map[string]string{"REST_MAX_INFLIGHT": "16"}, want: 16},
		{name: "given", env: map[string]string{"REST_MAX_INFLIGHT_PER_MERCHANT": "8"}, want: 8},
		{name: "the whole pool", env: map[string]string{"REST_MAX_INFLIGHT": "32", "REST_MAX_INFLIGHT_PER_MERCHANT": "32"}, want: 32},
		{name: "more than the pool", env: map[string]string{"REST_MAX_INFLIGHT_PER_MERCHANT": "300"}, wantErr: true},
		{name: "more than the pool by flag", env: map[string]string{"REST_MAX_INFLIGHT": "10"},
			args: []string{"-rest-max-inflight-per-merchant=20"}, wantErr: true},
		{name: "zero", env: map[string]string{"REST_MAX_INFLIGHT_PER_MERCHANT": "0"}, wantErr: true},
		{name: "not a number", env: map[string]string{"REST_MAX_INFLIGHT_PER_MERCHANT": "half"}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := LoadConfig(nil, func(k string) string { return tc.env[k] }, tc.args)
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), "REST_MAX_INFLIGHT_PER_MERCHANT") {
					t.Fatalf("error %v should name REST_MAX_INFLIGHT_PER_MERCHANT", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.RESTMaxInFlightPerMerchant != tc.want {
				t.Errorf("REST_MAX_INFLIGHT_PER_MERCHANT = %d, want %d", c.RESTMaxInFlightPerMerchant, tc.want)
			}
		})
	}
}
