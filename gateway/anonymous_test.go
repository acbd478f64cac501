package gateway_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestAnonymousBudget: requests without credentials (no pair, no token)
// draw on the replica's anonymous budget (RATE_LIMIT_ANONYMOUS_*); past it
// they are refused 429 RATE_LIMITED with retryAfter, while a merchant with
// credentials is still served and /healthz stays free.
func TestAnonymousBudget(t *testing.T) {
	const burst = 5
	// The budget alone: a held refusal (REFUSAL_DELAY_MAX, refusaldelay
	// in gqlhttp) would let the budget refill while the loop waits.
	g := startGateway(t, map[string]string{"RATE_LIMIT_ANONYMOUS_PER_SECOND": "1", "RATE_LIMIT_ANONYMOUS_BURST": "5", "REFUSAL_DELAY_MAX": "0"}, nil)
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
