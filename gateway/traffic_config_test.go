package gateway_test

import (
	"strings"
	"testing"

	"paygraph/gateway"
	"paygraph/ratelimit"
	"paygraph/trusteddocs"
)

func TestTrafficSettings(t *testing.T) {
	load := func(env map[string]string) (gateway.Config, error) {
		return gateway.LoadConfig(nil, func(k string) string { return env[k] }, nil)
	}
	t.Run("defaults", func(t *testing.T) {
		c, err := load(nil)
		if err != nil {
			t.Fatal(err)
		}
		if c.RateLimitRESTPerSecond != ratelimit.DefaultRESTCallsPerSecond || c.RateLimitRESTBurst != ratelimit.DefaultRESTBurst ||
			c.RateLimitRequestsPerSecond != ratelimit.DefaultRequestsPerSecond || c.RateLimitRequestsBurst != ratelimit.DefaultRequestsBurst {
			t.Fatalf("rate limits %+v, want ratelimit's defaults", c)
		}
		if c.TrustedDocumentsMode != trusteddocs.Off || c.TrustedDocuments != "" || c.TrustedDocumentsIntrospection {
			t.Fatalf("trusted documents on by default: %+v", c)
		}
		if c.MaxComplexity > c.RateLimitRESTBurst {
			t.Fatalf("the defaults contradict each other: MAX_COMPLEXITY %d over the burst %d", c.MaxComplexity, c.RateLimitRESTBurst)
		}
	})
	t.Run("bursts derived from the rates", func(t *testing.T) {
		for _, tt := range []struct {
			name                string
			env                 map[string]string
			restBurst, reqBurst int
		}{
			{"five seconds of REST calls, two of requests", map[string]string{"RATE_LIMIT_REST_CALLS_PER_SECOND": "300", "RATE_LIMIT_REQUESTS_PER_SECOND": "7"}, 1500, 14},
			{"at least MAX_COMPLEXITY", map[string]string{"MAX_COMPLEXITY": "2000"}, 2000, 400},
			{"the dropped settings ignored", map[string]string{"RATE_LIMIT_REST_BURST": "3", "RATE_LIMIT_REQUESTS_BURST": "3"}, 1000, 400},
		} {
			c, err := load(tt.env)
			if err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
			if c.RateLimitRESTBurst != tt.restBurst || c.RateLimitRequestsBurst != tt.reqBurst {
				t.Errorf("%s: bursts %d REST calls, %d requests; want %d, %d", tt.name, c.RateLimitRESTBurst, c.RateLimitRequestsBurst, tt.restBurst, tt.reqBurst)
			}
		}
	})
	for _, tt := range []struct {
		name    string
		env     map[string]string
		wantErr string // "" accepted
	}{
		{"MAX_COMPLEXITY over a burst whose rate is off", map[string]string{"MAX_COMPLEXITY": "2000", "RATE_LIMIT_REST_CALLS_PER_SECOND": "0"}, ""},
		{"every limit off", map[string]string{"RATE_LIMIT_REST_CALLS_PER_SECOND": "0", "RATE_LIMIT_REQUESTS_PER_SECOND": "0"}, ""},
		{"a negative rate", map[string]string{"RATE_LIMIT_REQUESTS_PER_SECOND": "-1"}, "RATE_LIMIT_REQUESTS_PER_SECOND"},
		{"enforce without a manifest", map[string]string{"TRUSTED_DOCUMENTS_MODE": "enforce"}, "TRUSTED_DOCUMENTS_MODE=enforce: needs TRUSTED_DOCUMENTS"},
		{"an unknown mode", map[string]string{"TRUSTED_DOCUMENTS_MODE": "strict", "TRUSTED_DOCUMENTS": "m.json"}, "TRUSTED_DOCUMENTS_MODE"},
		{"introspection not a boolean", map[string]string{"TRUSTED_DOCUMENTS_INTROSPECTION": "sometimes"}, "TRUSTED_DOCUMENTS_INTROSPECTION"},
		{"allow with a manifest", map[string]string{"TRUSTED_DOCUMENTS_MODE": "allow", "TRUSTED_DOCUMENTS": "m.json"}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := load(tt.env)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want one saying %q", err, tt.wantErr)
			}
		})
	}
}
