package gateway_test

// Session tokens over real HTTP (issue 15): the merchant's server mints at
// POST /auth/token with its pair, a browser or an app reads with
// "Authorization: Bearer <token>" what the token's scope allows, and
// nothing else, without a REST call for what it may not read.

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"paygraph/gateway"
	"paygraph/internal/gqltest"
	"paygraph/internal/testenv"
	"paygraph/sandbox"
	"paygraph/sessiontoken"
)

// tokenRig is a gateway with TOKEN_KEYS in front of the counting sandbox,
// on a settable clock, logging into a buffer.
type tokenRig struct {
	*testGateway
	client *gqltest.Client
	clock  *settableClock
	logs   *testenv.LockedBuffer

	mu     sync.Mutex
	tokens []string // every token minted, searched for in the logs
}

type settableClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *settableClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *settableClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func startTokenRig(t *testing.T, env map[string]string) *tokenRig {
	t.Helper()
	if env == nil {
		env = map[string]string{}
	}
	if _, ok := env["TOKEN_KEYS"]; !ok {
		env["TOKEN_KEYS"] = sessiontoken.GenerateKey()
	}
	rig := &tokenRig{clock: &settableClock{t: time.Now()}, logs: new(testenv.LockedBuffer)}
	logger := gateway.NewLogger(rig.logs, gateway.Config{LogFormat: "json"})
	rig.testGateway = startGateway(t, setup{env: env, logger: logger, opts: []gateway.Option{gateway.WithClock(rig.clock.Now)}})
	var secrets []string
	for _, b := range rig.Biz {
		secrets = append(secrets, b.APISecret)
	}
	rig.client = &gqltest.Client{URL: rig.URL, Forbidden: secrets}
	// The whole test's logs and metrics: no secret, no token.
	t.Cleanup(func() {
		metrics := rig.client.Do(t, http.MethodGet, "/metrics", nil, nil).Raw
		logs := rig.logs.String()
		rig.mu.Lock()
		defer rig.mu.Unlock()
		forbidden := append(append([]string{}, secrets...), env["TOKEN_KEYS"])
		for _, tok := range rig.tokens {
			forbidden = append(forbidden, tok, tok[len(sessiontoken.Prefix):len(sessiontoken.Prefix)+40])
		}
		for _, f := range forbidden {
			if strings.Contains(logs, f) {
				t.Errorf("a log line holds a secret or a token (%.12s…)", f)
			}
			if strings.Contains(string(metrics), f) {
				t.Errorf("/metrics holds a secret or a token (%.12s…)", f)
			}
		}
		if !strings.Contains(logs, `"msg":"request"`) {
			t.Errorf("no access log line was written: the check above proves nothing\n%s", logs)
		}
	})
	return rig
}

// tokenAnswer is the token endpoint's answer, token or errors.
type tokenAnswer struct {
	Status    int
	Token     string          `json:"token"`
	ExpiresAt string          `json:"expiresAt"`
	Scope     json.RawMessage `json:"scope"`
	Errors    []gqltest.Error `json:"errors"`
}

func (rig *tokenRig) mint(t *testing.T, h http.Header, body string) tokenAnswer {
	t.Helper()
	r := rig.client.Do(t, http.MethodPost, "/auth/token", h, []byte(body))
	var a tokenAnswer
	if err := json.Unmarshal(r.Raw, &a); err != nil {
		t.Fatalf("POST /auth/token: status %d, body %q is not JSON", r.Status, r.Raw)
	}
	a.Status = r.Status
	if r.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("POST /auth/token: Cache-Control %q, want no-store", r.Header.Get("Cache-Control"))
	}
	if a.Token != "" {
		rig.mu.Lock()
		rig.tokens = append(rig.tokens, a.Token)
		rig.mu.Unlock()
	}
	return a
}

// mustMint mints for business b with scope, or fails.
func (rig *tokenRig) mustMint(t *testing.T, b sandbox.Business, scope string) string {
	t.Helper()
	return rig.mustMintBody(t, b, `{"scope":`+scope+`}`)
}

// mustMintBody mints for business b with the request body, or fails.
func (rig *tokenRig) mustMintBody(t *testing.T, b sandbox.Business, body string) string {
	t.Helper()
	a := rig.mint(t, creds(b), body)
	if a.Status != http.StatusOK || a.Token == "" {
		t.Fatalf("mint %s: status %d, errors %+v", body, a.Status, a.Errors)
	}
	return a.Token
}

func bearer(token string) http.Header { return http.Header{"Authorization": {"Bearer " + token}} }

func TestSessionTokenMint(t *testing.T) {
	rig := startTokenRig(t, nil)
	biz := rig.Biz[0]
	session := rig.Sandbox.CheckoutSessions(biz.APIKey)[0]
	other := rig.Sandbox.CheckoutSessions(rig.Biz[1].APIKey)[0]
	badPair := http.Header{"X-Api-Key": {biz.APIKey}, "X-Api-Secret": {"sk_test_notTheSecret0000000000"}}
	tests := []struct {
		name      string
		h         http.Header
		body      string
		status    int
		code      string // "" for a token
		msg       string
		restCalls int
	}{
		{"all reads", creds(biz), `{"scope":{"kind":"all"}}`, 200, "", "", 1},
		{"checkout session by reference", creds(biz), `{"ttlSeconds":600,"scope":{"kind":"checkoutSession","id":"` + session.Reference + `"}}`, 200, "", "", 1},
		{"one payment", creds(biz), `{"scope":{"kind":"payment","id":"` + session.PaymentID + `"}}`, 200, "", "", 1},
		{"bad pair", badPair, `{"scope":{"kind":"all"}}`, 401, "UNAUTHENTICATED", "refused this x-api-key and x-api-secret", 1},
		{"no pair", nil, `{"scope":{"kind":"all"}}`, 401, "UNAUTHENTICATED", "needs the x-api-key and x-api-secret headers", 0},
		{"another merchant's session", creds(biz), `{"scope":{"kind":"checkoutSession","id":"` + other.Reference + `"}}`, 400, "BAD_USER_INPUT", "no checkout session", 1},
		{"ttl above TOKEN_MAX_TTL", creds(biz), `{"ttlSeconds":3601,"scope":{"kind":"all"}}`, 400, "BAD_USER_INPUT", "TOKEN_MAX_TTL", 0},
		{"no scope", creds(biz), `{}`, 400, "BAD_USER_INPUT", "scope is required", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rig.Sandbox.ResetCalls()
			a := rig.mint(t, tc.h, tc.body)
			if a.Status != tc.status {
				t.Fatalf("status %d, want %d (errors %+v)", a.Status, tc.status, a.Errors)
			}
			if got := rig.Sandbox.CallCount(""); got != tc.restCalls {
				t.Errorf("%d REST calls, want %d", got, tc.restCalls)
			}
			if tc.code == "" {
				exp, err := time.Parse(sessiontoken.DateTimeLayout, a.ExpiresAt)
				if !strings.HasPrefix(a.Token, sessiontoken.Prefix) || err != nil || len(a.Scope) == 0 {
					t.Fatalf("answer %+v is not {token, expiresAt, scope}", a)
				}
				if d := exp.Sub(rig.clock.Now()); d <= 0 || d > time.Hour {
					t.Errorf("expiresAt %s is %s from now", a.ExpiresAt, d)
				}
				return
			}
			if len(a.Errors) != 1 || a.Errors[0].Code() != tc.code || !strings.Contains(a.Errors[0].Message, tc.msg) || a.Token != "" {
				t.Errorf("answer %+v, want one %s error saying %q", a, tc.code, tc.msg)
			}
		})
	}
	t.Run("the readable footer holds no credential", func(t *testing.T) {
		tok := rig.mustMint(t, biz, `{"kind":"all"}`)
		parts := strings.Split(tok, ".")
		footer, err := base64.RawURLEncoding.DecodeString(parts[len(parts)-1])
		if err != nil || strings.Contains(string(footer), biz.APIKey) || strings.Contains(string(footer), biz.APISecret) || !strings.HasPrefix(string(footer), `{"kid":"k4.lid.`) {
			t.Errorf("footer %q", footer)
		}
		for _, s := range []string{biz.APIKey, biz.APISecret, biz.APISecret[8:]} {
			if strings.Contains(tok, s) {
				t.Errorf("the token holds a credential in the clear")
			}
		}
	})
}

func TestSessionTokensOff(t *testing.T) {
	t.Parallel()
	g := startGateway(t, setup{env: map[string]string{}}) // a REST API, no TOKEN_KEYS
	c := &gqltest.Client{URL: g.URL}
	r := c.Send(t, http.MethodPost, "/auth/token", creds(g.Biz[0]), []byte(`{"scope":{"kind":"all"}}`))
	if r.Status != http.StatusNotFound || len(r.Errors) != 1 || !strings.Contains(r.Errors[0].Message, "TOKEN_KEYS is not set") {
		t.Errorf("POST /auth/token without TOKEN_KEYS: status %d %+v, want 404 saying TOKEN_KEYS is not set", r.Status, r.Errors)
	}
	r = c.Post(t, bearer("v4.local.abc.def"), `{ payments(first: 1) { nodes { id } } }`, nil)
	if e := r.WantCode(t, "UNAUTHENTICATED"); r.Status != 401 || !strings.Contains(e.Message, "TOKEN_KEYS is not set") {
		t.Errorf("a bearer token without TOKEN_KEYS: status %d %q", r.Status, e.Message)
	}
}

// A checkout-scoped token reads its session (by reference or id) and the
// session's payment; every other field is FORBIDDEN with no REST call.
func TestSessionTokenCheckoutScope(t *testing.T) {
	rig := startTokenRig(t, nil)
	biz := rig.Biz[0]
	sessions := rig.Sandbox.CheckoutSessions(biz.APIKey)
	own, other := sessions[0], sessions[1]
	var otherPayment string
	for _, p := range rig.Sandbox.Payments(biz.APIKey) {
		if p.ID != own.PaymentID {
			otherPayment = p.ID
			break
		}
	}
	link := rig.Sandbox.PaymentLinks(biz.APIKey)[0].ID
	tok := rig.mustMint(t, biz, `{"kind":"checkoutSession","id":"`+own.Reference+`"}`)
	h := bearer(tok)

	allowed := []struct{ name, query string }{
		{"session by reference", fmt.Sprintf(`{ checkoutSession(id: %q) { sessionId reference amount { paisa } payment { id status } } }`, own.Reference)},
		{"session by id", fmt.Sprintf(`{ checkoutSession(id: %q) { reference payment { id } } }`, own.ID)},
		{"the session's payment", fmt.Sprintf(`{ payment(id: %q) { id amount { amount } } node(id: %q) { id } }`, own.PaymentID, own.PaymentID)},
	}
	for _, tc := range allowed {
		t.Run(tc.name, func(t *testing.T) {
			r := rig.client.Post(t, h, tc.query, nil).WantNoErrors(t)
			if !strings.Contains(string(r.Data), own.PaymentID) && !strings.Contains(string(r.Data), own.Reference) {
				t.Errorf("data %s names neither the session nor its payment", r.Data)
			}
		})
	}
	forbidden := []struct{ name, query string }{
		{"payments", `{ payments(first: 5) { nodes { id } } }`},
		{"another session", fmt.Sprintf(`{ checkoutSession(id: %q) { sessionId } }`, other.Reference)},
		{"another session by id", fmt.Sprintf(`{ checkoutSession(id: %q) { sessionId } }`, other.ID)},
		{"paymentLink", fmt.Sprintf(`{ paymentLink(id: %q) { id } }`, link)},
		{"node of another payment", fmt.Sprintf(`{ node(id: %q) { id } }`, otherPayment)},
		{"node of a link", fmt.Sprintf(`{ node(id: %q) { id } }`, link)},
		{"nodes of others", fmt.Sprintf(`{ nodes(ids: [%q, %q]) { id } }`, otherPayment, link)},
		{"payment of another id", fmt.Sprintf(`{ payment(id: %q) { id } }`, otherPayment)},
	}
	for _, tc := range forbidden {
		t.Run(tc.name, func(t *testing.T) {
			rig.Sandbox.ResetCalls()
			r := rig.client.Post(t, h, tc.query, nil)
			e := r.WantCode(t, "FORBIDDEN")
			if !strings.Contains(e.Message, "scope does not include") {
				t.Errorf("message %q", e.Message)
			}
			for _, c := range r.Codes() {
				if c != "FORBIDDEN" {
					t.Errorf("codes %v, want FORBIDDEN only", r.Codes())
				}
			}
			if n := rig.Sandbox.CallCount(""); n != 0 {
				t.Errorf("%d REST calls for a field outside the scope, want 0", n)
			}
		})
	}
	t.Run("in and out of scope in one query", func(t *testing.T) {
		rig.Sandbox.ResetCalls()
		r := rig.client.Post(t, h, fmt.Sprintf(`{ own: checkoutSession(id: %q) { reference } p: payment(id: %q) { id } }`, own.Reference, otherPayment), nil)
		r.WantCode(t, "FORBIDDEN")
		if !strings.Contains(string(r.Data), own.Reference) || rig.Sandbox.CallCount("") != 1 {
			t.Errorf("data %s with %d REST calls, want the session with 1", r.Data, rig.Sandbox.CallCount(""))
		}
	})
}

// A payment-scoped token reads that payment only; an "all" token with
// full customer data reads what the two headers read.
func TestSessionTokenOtherScopes(t *testing.T) {
	rig := startTokenRig(t, nil)
	biz := rig.Biz[0]
	pays := rig.Sandbox.Payments(biz.APIKey)
	one := bearer(rig.mustMint(t, biz, `{"kind":"payment","id":"`+pays[0].ID+`"}`))
	rig.client.Post(t, one, fmt.Sprintf(`{ payment(id: %q) { id } }`, pays[0].ID), nil).WantNoErrors(t)
	rig.Sandbox.ResetCalls()
	rig.client.Post(t, one, fmt.Sprintf(`{ payment(id: %q) { id } }`, pays[1].ID), nil).WantCode(t, "FORBIDDEN")
	rig.client.Post(t, one, `{ payments(first: 1) { nodes { id } } }`, nil).WantCode(t, "FORBIDDEN")
	if n := rig.Sandbox.CallCount(""); n != 0 {
		t.Errorf("%d REST calls outside a payment scope", n)
	}

	all := bearer(rig.mustMintBody(t, biz, `{"scope":{"kind":"all"},"customerData":"full"}`))
	const q = `{ payments(first: 3) { nodes { id customer { address } } } }`
	byToken := rig.client.Post(t, all, q, nil).WantNoErrors(t)
	byHeaders := rig.client.Post(t, creds(biz), q, nil).WantNoErrors(t)
	if string(byToken.Data) != string(byHeaders.Data) {
		t.Errorf("an all-reads token reads\n%s\nthe headers read\n%s", byToken.Data, byHeaders.Data)
	}
}

// Expiry on the gateway's injected clock: accepted up to expiresAt,
// UNAUTHENTICATED saying "expired" from then on.
func TestSessionTokenExpiry(t *testing.T) {
	rig := startTokenRig(t, nil)
	a := rig.mint(t, creds(rig.Biz[0]), `{"ttlSeconds":60,"scope":{"kind":"all"}}`)
	if a.Status != 200 {
		t.Fatalf("mint: %d %+v", a.Status, a.Errors)
	}
	const q = `{ payments(first: 1) { nodes { id } } }`
	rig.clock.Advance(59 * time.Second)
	rig.client.Post(t, bearer(a.Token), q, nil).WantNoErrors(t)
	rig.clock.Advance(time.Second)
	rig.Sandbox.ResetCalls()
	r := rig.client.Post(t, bearer(a.Token), q, nil)
	if e := r.WantCode(t, "UNAUTHENTICATED"); r.Status != 401 || !strings.Contains(e.Message, "expired") {
		t.Errorf("expired token: status %d %q", r.Status, e.Message)
	}
	if n := rig.Sandbox.CallCount(""); n != 0 {
		t.Errorf("%d REST calls for an expired token", n)
	}
}

// Every one-byte change of a token is refused, saying which, with no REST
// call; as are two ways in at once and malformed Authorization headers.
func TestSessionTokenRefusals(t *testing.T) {
	rig := startTokenRig(t, nil)
	biz := rig.Biz[0]
	tok := rig.mustMint(t, biz, `{"kind":"all"}`)
	foreign := startTokenRig(t, nil).mustMint(t, biz, `{"kind":"all"}`)
	flip := func(i int) string {
		b := []byte(tok)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return string(b)
	}
	payloadAt, footerAt := len(sessiontoken.Prefix)+50, strings.LastIndexByte(tok, '.')+5
	const q = `{ payments(first: 1) { nodes { id } } }`
	tests := []struct {
		name string
		h    http.Header
		msg  string
	}{
		{"payload byte changed", bearer(flip(payloadAt)), "modified"},
		{"first payload byte changed", bearer(flip(len(sessiontoken.Prefix))), "modified"},
		{"last byte changed", bearer(flip(len(tok) - 1)), "malformed"},
		{"footer byte changed", bearer(flip(footerAt)), "malformed"},
		{"truncated", bearer(tok[:len(tok)-10]), "malformed"},
		{"not a token", bearer("hello"), "malformed"},
		{"another gateway's key", bearer(foreign), "not made with a key of this gateway"},
		{"token and headers", func() http.Header { h := creds(biz); h.Set("Authorization", "Bearer "+tok); return h }(), "not both"},
		{"Authorization twice", http.Header{"Authorization": {"Bearer " + tok, "Bearer " + tok}}, "more than once"},
		{"not Bearer", http.Header{"Authorization": {"Basic " + tok}}, "must be Bearer"},
		{"no token", http.Header{"Authorization": {"Bearer "}}, "must be Bearer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rig.Sandbox.ResetCalls()
			r := rig.client.Post(t, tc.h, q, nil)
			e := r.WantCode(t, "UNAUTHENTICATED")
			if r.Status != 401 || !strings.Contains(e.Message, tc.msg) || r.Data != nil && string(r.Data) != "null" {
				t.Errorf("status %d, message %q, data %s; want 401 saying %q", r.Status, e.Message, r.Data, tc.msg)
			}
			if strings.Contains(e.Message, tok[len(sessiontoken.Prefix):len(sessiontoken.Prefix)+20]) {
				t.Errorf("the message echoes the token: %q", e.Message)
			}
			if n := rig.Sandbox.CallCount(""); n != 0 {
				t.Errorf("%d REST calls for a refused token", n)
			}
		})
	}
	t.Run("the token endpoint refuses a token beside the pair", func(t *testing.T) {
		h := creds(biz)
		h.Set("Authorization", "Bearer "+tok)
		if a := rig.mint(t, h, `{"scope":{"kind":"all"}}`); a.Status != 401 || a.Token != "" {
			t.Errorf("status %d", a.Status)
		}
		if a := rig.mint(t, bearer(tok), `{"scope":{"kind":"all"}}`); a.Status != 401 || a.Token != "" {
			t.Errorf("a token minted a token: status %d", a.Status)
		}
	})
}

// A token of merchant A reads A's data only: the pair it carries is A's,
// and the REST API answers for A.
func TestSessionTokenMerchantIsolation(t *testing.T) {
	rig := startTokenRig(t, nil)
	a, b := rig.Biz[0], rig.Biz[1]
	tokA := bearer(rig.mustMint(t, a, `{"kind":"all"}`))
	bPay := rig.Sandbox.Payments(b.APIKey)[0].ID
	bSession := rig.Sandbox.CheckoutSessions(b.APIKey)[0]
	bLink := rig.Sandbox.PaymentLinks(b.APIKey)[0].ID
	for _, q := range []string{
		fmt.Sprintf(`{ payment(id: %q) { id } }`, bPay),
		fmt.Sprintf(`{ checkoutSession(id: %q) { sessionId } }`, bSession.Reference),
		fmt.Sprintf(`{ paymentLink(id: %q) { id } }`, bLink),
	} {
		r := rig.client.Post(t, tokA, q, nil)
		r.WantCode(t, "NOT_FOUND")
		if strings.Contains(string(r.Raw), bPay) && !strings.Contains(q, bPay) {
			t.Errorf("merchant B's data in %s", r.Raw)
		}
	}
	var page struct {
		Payments struct{ Nodes []struct{ ID string } } `json:"payments"`
	}
	rig.client.Post(t, tokA, `{ payments(first: 100) { nodes { id } } }`, nil).WantNoErrors(t).Decode(t, &page)
	ofB := map[string]bool{}
	for _, p := range rig.Sandbox.Payments(b.APIKey) {
		ofB[p.ID] = true
	}
	if len(page.Payments.Nodes) == 0 {
		t.Fatal("A's token listed nothing")
	}
	for _, n := range page.Payments.Nodes {
		if ofB[n.ID] {
			t.Errorf("A's token listed B's payment %s", n.ID)
		}
	}
	for _, c := range rig.Sandbox.Calls() {
		if c.APIKey != a.APIKey {
			t.Errorf("a REST call with key %q for A's token", c.APIKey)
		}
	}
}

// The logger takes out any token-shaped text, and a browser may send
// Authorization from an allowed origin.
func TestSessionTokenRedactionAndCORS(t *testing.T) {
	rig := startTokenRig(t, map[string]string{"CORS_ALLOWED_ORIGINS": "https://shop.example.com"})
	tok := rig.mustMint(t, rig.Biz[0], `{"kind":"all"}`)
	logger := gateway.NewLogger(rig.logs, gateway.Config{LogFormat: "json"})
	logger.Info("client sent "+tok, "authorization_value", "Bearer "+tok, "nested", slog.Group("g", "t", tok))
	if strings.Contains(rig.logs.String(), tok[len(sessiontoken.Prefix):len(sessiontoken.Prefix)+40]) {
		t.Errorf("a token reached the log")
	}

	req, _ := http.NewRequest(http.MethodOptions, rig.URL+"/graphql", nil)
	req.Header.Set("Origin", "https://shop.example.com")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "authorization,content-type")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := strings.ToLower(resp.Header.Get("Access-Control-Allow-Headers")); !strings.Contains(got, "authorization") {
		t.Errorf("preflight allows headers %q, want authorization", got)
	}
	h := bearer(tok)
	h.Set("Origin", "https://shop.example.com")
	r := rig.client.Post(t, h, `{ payments(first: 1) { nodes { id } } }`, nil).WantNoErrors(t)
	if r.Header.Get("Access-Control-Allow-Origin") != "https://shop.example.com" {
		t.Errorf("Access-Control-Allow-Origin %q", r.Header.Get("Access-Control-Allow-Origin"))
	}
}
