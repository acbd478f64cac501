package gateway_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"paygraph/gateway"
	"paygraph/ratelimit"
)

// TestAnonymousBudget: requests without credentials (no pair, no token)
// draw on the replica's anonymous budget (RATE_LIMIT_ANONYMOUS_*); past it
// they are refused 429 RATE_LIMITED with retryAfter, while a merchant with
// credentials is still served and /healthz stays free.
func TestAnonymousBudget(t *testing.T) {
	const burst = 5
	// The budget alone: a held refusal (REFUSAL_DELAY_MAX, refusaldelay
	// in gqlhttp) would let the budget refill while the loop waits.
	g := startGateway(t, setup{env: map[string]string{"RATE_LIMIT_ANONYMOUS_PER_SECOND": "1", "Config.RateLimitAnonymousBurst": "5", "REFUSAL_DELAY_MAX": "0"}})
	post := func(h http.Header, query string) (int, []byte) {
		t.Helper()
		body, _ := json.Marshal(map[string]string{"query": query})
		req, _ := http.NewRequest(http.MethodPost, g.URL+"/graphql", strings.NewReader(string(body)))
		for k, v := range h {
			req.Header[k] = v
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	t.Run("anonymous requests beyond the budget get RATE_LIMITED", func(t *testing.T) {
		const sent = 30
		admitted := 0
		var refusal []byte
		for range sent {
			status, b := post(nil, `{ __schema { queryType { name } } }`)
			switch status {
			case http.StatusOK:
				admitted++
			case http.StatusTooManyRequests:
				refusal = b
			default:
				t.Fatalf("status %d: %s", status, b)
			}
		}
		// burst + 1/s: the loop takes well under a few seconds.
		if admitted < burst || admitted > burst+3 {
			t.Fatalf("admitted %d of %d anonymous requests, want about the burst %d", admitted, sent, burst)
		}
		t.Logf("anonymous introspection: %d of %d admitted (budget burst %d + 1/s)", admitted, sent, burst)
		var body struct {
			Errors []struct {
				Extensions struct {
					Code       string
					RetryAfter int
				}
			}
		}
		if err := json.Unmarshal(refusal, &body); err != nil || len(body.Errors) != 1 ||
			body.Errors[0].Extensions.Code != "RATE_LIMITED" || body.Errors[0].Extensions.RetryAfter < 1 {
			t.Fatalf("refusal %s (%v), want one RATE_LIMITED error with retryAfter", refusal, err)
		}
	})
	t.Run("a merchant with credentials is still served", func(t *testing.T) {
		for range 20 {
			status, b := post(creds(g.Biz[0]), `{ __schema { queryType { name } } }`)
			if status != http.StatusOK || strings.Contains(string(b), `"errors"`) {
				t.Fatalf("merchant: %d %s", status, b)
			}
		}
	})
	t.Run("healthz stays free", func(t *testing.T) {
		resp, err := http.Get(g.URL + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("healthz %d", resp.StatusCode)
		}
	})
}

// TestAnonymousAddressBudget: RATE_LIMIT_ANONYMOUS_PER_ADDRESS_* reach the
// edge: one address's anonymous requests are refused past its budget
// (RATE_LIMITED with retryAfter) while the shared budget is off, a
// merchant from the same address is still served, and 0 turns it off.
// Its defaults are the settings table's.
func TestAnonymousAddressBudget(t *testing.T) {
	anonymous := func(t *testing.T, g *testGateway, h http.Header, n int) (admitted int, refusal []byte) {
		t.Helper()
		for range n {
			body, _ := json.Marshal(map[string]string{"query": `{ __schema { queryType { name } } }`})
			req, _ := http.NewRequest(http.MethodPost, g.URL+"/graphql", strings.NewReader(string(body)))
			for k, v := range h {
				req.Header[k] = v
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			switch resp.StatusCode {
			case http.StatusOK:
				admitted++
			case http.StatusTooManyRequests:
				refusal = b
			default:
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
		}
		return admitted, refusal
	}
	off := map[string]string{"RATE_LIMIT_ANONYMOUS_PER_SECOND": "0", "REFUSAL_DELAY_MAX": "0"}
	t.Run("one address past its budget is refused; a merchant is served", func(t *testing.T) {
		env := map[string]string{"RATE_LIMIT_ANONYMOUS_PER_ADDRESS_PER_SECOND": "1", "Config.RateLimitAnonymousPerAddressBurst": "3"}
		for k, v := range off {
			env[k] = v
		}
		g := startGateway(t, setup{env: env})
		admitted, refusal := anonymous(t, g, nil, 20)
		if admitted < 3 || admitted > 5 {
			t.Fatalf("admitted %d of 20, want about the burst 3", admitted)
		}
		if !strings.Contains(string(refusal), `"RATE_LIMITED"`) || !strings.Contains(string(refusal), `"retryAfter"`) {
			t.Fatalf("refusal %s, want RATE_LIMITED with retryAfter", refusal)
		}
		if admitted, _ := anonymous(t, g, creds(g.Biz[0]), 20); admitted != 20 {
			t.Fatalf("merchant: %d of 20 served", admitted)
		}
	})
	t.Run("off when 0", func(t *testing.T) {
		env := map[string]string{"RATE_LIMIT_ANONYMOUS_PER_ADDRESS_PER_SECOND": "0", "Config.RateLimitAnonymousPerAddressBurst": "3"}
		for k, v := range off {
			env[k] = v
		}
		if admitted, _ := anonymous(t, startGateway(t, setup{env: env}), nil, 20); admitted != 20 {
			t.Fatalf("admitted %d of 20, want all", admitted)
		}
	})
	t.Run("defaults", func(t *testing.T) {
		cfg, err := gateway.LoadConfig(nil, func(string) string { return "" }, nil)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.RateLimitAnonymousPerAddressPerSecond != ratelimit.DefaultAnonymousPerAddressPerSecond || cfg.RateLimitAnonymousPerAddressBurst != ratelimit.DefaultAnonymousPerAddressBurst {
			t.Fatalf("defaults %d/s burst %d", cfg.RateLimitAnonymousPerAddressPerSecond, cfg.RateLimitAnonymousPerAddressBurst)
		}
	})
}
