package gateway

import (
	"strings"
	"testing"
)

// TestHostAndSandboxSettings: HOST picks the listen address, and
// SANDBOX=false makes a missing REST_BASE_URL an error at start.
func TestHostAndSandboxSettings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		env        map[string]string
		listen     string // ListenAddr; "" when an error is wanted
		errHolding string
	}{
		{"defaults: every interface, sandbox allowed", nil, ":8080", ""},
		{"HOST loopback", map[string]string{"HOST": "127.0.0.1", "PORT": "9000"}, "127.0.0.1:9000", ""},
		{"HOST IPv6", map[string]string{"HOST": "::1"}, "[::1]:8080", ""},
		{"HOST name", map[string]string{"HOST": "localhost"}, "localhost:8080", ""},
		{"HOST with a port", map[string]string{"HOST": "127.0.0.1:80"}, "", "HOST="},
		{"SANDBOX=false with REST_BASE_URL", map[string]string{"SANDBOX": "false", "REST_BASE_URL": "https://api.example.com/v1"}, ":8080", ""},
		{"SANDBOX=false without REST_BASE_URL", map[string]string{"SANDBOX": "false"}, "", "REST_BASE_URL must be set"},
		{"SANDBOX unknown value", map[string]string{"SANDBOX": "no"}, "", "SANDBOX="},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := LoadConfig(nil, func(k string) string { return tc.env[k] }, nil)
			if tc.errHolding != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHolding) {
					t.Fatalf("error %v, want one holding %q", err, tc.errHolding)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := c.ListenAddr(); got != tc.listen {
				t.Errorf("ListenAddr %q, want %q", got, tc.listen)
			}
		})
	}
}
