package gateway_test

import (
	"bytes"
	"flag"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"paygraph/gateway"
	"paygraph/internal/gqltest"
	"paygraph/sessiontoken"
)

func TestTokenSettings(t *testing.T) {
	key := sessiontoken.GenerateKey()
	tests := []struct {
		name       string
		env        map[string]string
		err        string // "" for none
		max, deflt time.Duration
	}{
		{"defaults", nil, "", sessiontoken.DefaultMaxTTL, sessiontoken.DefaultTTL},
		{"keys", map[string]string{"TOKEN_KEYS": key + ", " + sessiontoken.GenerateKey()}, "", time.Hour, 15 * time.Minute},
		{"a bad key is not echoed", map[string]string{"TOKEN_KEYS": key + ",not-a-key-zzzz"}, "TOKEN_KEYS=(value hidden): TOKEN_KEYS: key 2 of 2", 0, 0},
		{"a smaller maximum lowers the default", map[string]string{"TOKEN_MAX_TTL": "10m"}, "", 10 * time.Minute, 10 * time.Minute},
		{"maximum over a day", map[string]string{"TOKEN_MAX_TTL": "25h"}, "TOKEN_MAX_TTL", 0, 0},
		{"maximum zero", map[string]string{"TOKEN_MAX_TTL": "0s"}, "TOKEN_MAX_TTL", 0, 0},
		{"not whole seconds", map[string]string{"TOKEN_MAX_TTL": "1500ms"}, "TOKEN_MAX_TTL", 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := gateway.LoadConfig(nil, func(k string) string { return tc.env[k] }, nil)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one saying %q", err, tc.err)
				}
				if strings.Contains(err.Error(), key) || strings.Contains(err.Error(), "not-a-key") {
					t.Errorf("the error echoes TOKEN_KEYS: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.TokenMaxTTL != tc.max || cfg.TokenDefaultTTL != tc.deflt {
				t.Errorf("max %s default %s, want %s %s", cfg.TokenMaxTTL, cfg.TokenDefaultTTL, tc.max, tc.deflt)
			}
			if (tc.env["TOKEN_KEYS"] != "") != (cfg.TokenKeys != nil) {
				t.Errorf("TokenKeys %v with TOKEN_KEYS set: %v", cfg.TokenKeys, tc.env["TOKEN_KEYS"] != "")
			}
		})
	}
	t.Run("-help hides the keys", func(t *testing.T) {
		fs := flag.NewFlagSet("paygraph", flag.ContinueOnError)
		var out bytes.Buffer
		fs.SetOutput(&out)
		_, err := gateway.LoadConfig(fs, func(k string) string { return map[string]string{"TOKEN_KEYS": key}[k] }, []string{"-help"})
		if err != flag.ErrHelp || !strings.Contains(out.String(), "token-keys") || strings.Contains(out.String(), key) {
			t.Errorf("err %v; -help:\n%s", err, out.String())
		}
	})
}

// In sandbox mode (no REST_BASE_URL) tokens work at once with a random
// key, and the banner's mint curl, as printed, gets a token that reads.
func TestSandboxBannerMintsToken(t *testing.T) {
	t.Parallel()
	cfg, err := gateway.LoadConfig(nil, func(string) string { return "" }, nil)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close() })
	srv := httptest.NewServer(gw)
	t.Cleanup(srv.Close)
	var banner bytes.Buffer
	gw.PrintBanner(&banner, &net.TCPAddr{Port: 8080})
	m := regexp.MustCompile(`curl -s \S+/auth/token -H 'content-type: application/json' \\\n\s+-H 'x-api-key: (\S+)' -H 'x-api-secret: (\S+)' \\\n\s+-d '([^']+)'`).FindStringSubmatch(banner.String())
	if m == nil {
		t.Fatalf("the banner has no mint curl:\n%s", banner.String())
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/auth/token", strings.NewReader(m[3]))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", m[1])
	req.Header.Set("x-api-secret", m[2])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	tok := regexp.MustCompile(`"token":"(v4\.local\.[^"]+)"`).FindSubmatch(body)
	if resp.StatusCode != 200 || tok == nil {
		t.Fatalf("the banner's curl: status %d %s", resp.StatusCode, body)
	}
	c := &gqltest.Client{URL: srv.URL, Forbidden: []string{m[2]}}
	c.Post(t, http.Header{"Authorization": {"Bearer " + string(tok[1])}}, `{ payments(first: 1) { nodes { id } } }`, nil).WantNoErrors(t)

	// GraphiQL shows the token box (the sandbox's page holds the demo
	// pair on purpose: not checked for it).
	page := (&gqltest.Client{URL: srv.URL}).Do(t, http.MethodGet, "/", nil, nil)
	if !strings.Contains(string(page.Raw), `tokenReplaces`) {
		t.Errorf("GraphiQL's page has no session-token box option")
	}
}
