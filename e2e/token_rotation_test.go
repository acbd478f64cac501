package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"paygraph/internal/gqltest"
	"paygraph/sandbox"
	"paygraph/sessiontoken"
)

// TestTokenKeyRotation runs the rotation of docs/clients.md "Session tokens for
// browsers and apps" with three gateway processes and no shared state but
// TOKEN_KEYS: a token minted by
// a replica holding key A is accepted by a replica holding [B, A] (B now
// mints, A still verifies) and refused as foreign by one holding [B] alone
// (A retired); a token the [B, A] replica mints is B's, so the A-only
// replica refuses it. No process logs a secret or a token.
func TestTokenKeyRotation(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the gateway binary: not in -short")
	}
	keyA, keyB := sessiontoken.GenerateKey(), sessiontoken.GenerateKey()
	onlyA := startGateway(t, map[string]string{"TOKEN_KEYS": keyA})
	rotating := startGateway(t, map[string]string{"TOKEN_KEYS": keyB + "," + keyA})
	onlyB := startGateway(t, map[string]string{"TOKEN_KEYS": keyB})
	// Each runs the embedded sandbox, whose demo merchants are the same.
	biz := sandbox.New(sandbox.Options{}).Businesses()[0]

	var minted []string
	mint := func(p *proc) string {
		t.Helper()
		c := &gqltest.Client{URL: p.URL, Forbidden: []string{biz.APISecret}}
		r := c.Do(t, http.MethodPost, "/auth/token", gqltest.Headers(biz.APIKey, biz.APISecret), []byte(`{"scope":{"kind":"all"}}`))
		var a struct{ Token string }
		if err := json.Unmarshal(r.Raw, &a); err != nil || r.Status != 200 || a.Token == "" {
			t.Fatalf("mint on %s: status %d %s", p.URL, r.Status, r.Raw)
		}
		minted = append(minted, a.Token)
		return a.Token
	}
	read := func(p *proc, token string) *gqltest.Response {
		t.Helper()
		c := &gqltest.Client{URL: p.URL, Forbidden: []string{biz.APISecret}}
		return c.Post(t, http.Header{"Authorization": {"Bearer " + token}}, `{ payments(first: 2) { nodes { id } } }`, nil)
	}

	byA, byBA := mint(onlyA), mint(rotating)
	cases := []struct {
		name   string
		minter string
		token  string
		reader *proc
		ok     bool
	}{
		{"A's token on A", "A", byA, onlyA, true},
		{"A's token on [B, A]", "A", byA, rotating, true},
		{"A's token on [B]", "A", byA, onlyB, false},
		{"[B, A]'s token on [B]", "B", byBA, onlyB, true},
		{"[B, A]'s token on A", "B", byBA, onlyA, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := read(tc.reader, tc.token)
			if tc.ok {
				r.WantNoErrors(t)
				return
			}
			e := r.WantCode(t, "UNAUTHENTICATED")
			if r.Status != http.StatusUnauthorized || !strings.Contains(e.Message, "not made with a key of this gateway") {
				t.Errorf("status %d %q, want 401 saying the token is foreign", r.Status, e.Message)
			}
		})
	}
	// The log lines (JSON); the sandbox's banner prints its demo pair on
	// purpose, for the person at the terminal.
	for name, p := range map[string]*proc{"A": onlyA, "[B, A]": rotating, "[B]": onlyB} {
		p.logWritten(t)
		var logs strings.Builder
		lines := 0
		for _, line := range strings.Split(p.Output(), "\n") {
			if strings.HasPrefix(line, "{") {
				logs.WriteString(line + "\n")
				lines++
			}
		}
		if lines == 0 {
			t.Errorf("replica %s wrote no log line: the check proves nothing", name)
		}
		for _, s := range append([]string{biz.APISecret, keyA, keyB}, minted...) {
			if strings.Contains(logs.String(), s) {
				t.Errorf("replica %s logged a secret, a key or a token (%.12s…)", name, s)
			}
		}
	}
}
