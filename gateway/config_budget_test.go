package gateway_test

import (
	"bytes"
	"encoding/hex"
	"log/slog"
	"paygraph/gateway"
	"strings"
	"testing"
)

// TestConfigCursorKeysAndResponseBytes: CURSOR_KEYS and MAX_RESPONSE_BYTES
// are read, refused with a message naming the variable, and a cursor key
// is never echoed (it is a secret).
func TestConfigCursorKeysAndResponseBytes(t *testing.T) {
	t.Parallel()
	key := hex.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	short := hex.EncodeToString([]byte("0123456789abcdef0123456789abcde")) // 31 bytes
	for _, tc := range []struct {
		name, env, value string
		ok               bool
	}{
		{"one key", "CURSOR_KEYS", key, true},
		{"rotation", "CURSOR_KEYS", key + "," + strings.ToUpper(key), true},
		{"key too short", "CURSOR_KEYS", short, false},
		{"key not encoded", "CURSOR_KEYS", "not a key at all, really not", false},
		{"response bytes", "MAX_RESPONSE_BYTES", "1048576", true},
		{"response bytes too small", "MAX_RESPONSE_BYTES", "1000", false},
		{"response bytes not a number", "MAX_RESPONSE_BYTES", "8MiB", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := gateway.LoadConfig(nil, func(k string) string {
				if k == tc.env {
					return tc.value
				}
				return ""
			}, nil)
			if tc.ok != (err == nil) {
				t.Fatalf("%s=%q: error %v", tc.env, tc.value, err)
			}
			if err != nil && !strings.Contains(err.Error(), tc.env) {
				t.Errorf("error %v does not name %s", err, tc.env)
			}
			if err != nil && tc.env == "CURSOR_KEYS" && strings.Contains(err.Error(), tc.value) {
				t.Errorf("error %v echoes the key", err)
			}
			if tc.ok && tc.env == "CURSOR_KEYS" && c.CursorKeys == nil {
				t.Error("no keys")
			}
		})
	}
	c, err := gateway.LoadConfig(nil, func(string) string { return "" }, nil)
	if err != nil || c.CursorKeys != nil || c.MaxResponse != 8<<20 {
		t.Errorf("defaults: keys %v, max response %d, %v", c.CursorKeys, c.MaxResponse, err)
	}
}

// TestCursorKeysWarning: a gateway in front of a real REST API without
// CURSOR_KEYS says, once at start, that its cursors work on it alone; the
// sandbox (one process by design) and a gateway with keys say nothing.
func TestCursorKeysWarning(t *testing.T) {
	t.Parallel()
	key := hex.EncodeToString(bytes.Repeat([]byte{7}, 32))
	for _, tc := range []struct {
		name string
		env  map[string]string
		warn bool
	}{
		{"REST API, no keys", map[string]string{"REST_BASE_URL": "http://rest.invalid"}, true},
		{"REST API with keys", map[string]string{"REST_BASE_URL": "http://rest.invalid", "CURSOR_KEYS": key}, false},
		{"sandbox", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := gateway.LoadConfig(nil, func(k string) string { return tc.env[k] }, nil)
			if err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			gw, err := gateway.New(cfg, gateway.WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = gw.Close() })
			if got := strings.Contains(logs.String(), "CURSOR_KEYS is unset"); got != tc.warn {
				t.Errorf("warning logged: %v, want %v; logs: %s", got, tc.warn, logs.String())
			}
			if strings.Contains(logs.String(), key) {
				t.Error("the log holds the key")
			}
		})
	}
}
