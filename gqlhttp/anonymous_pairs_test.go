package gqlhttp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"paygraph/gqlhttp"
	"paygraph/ratelimit"
	"paygraph/restclient"
	"paygraph/sandbox"
	"paygraph/sessiontoken"
)

// TestAnonymousUntilAccepted: the edge's budgets take who a request is
// from one decision, restclient.Client.Merchant: a merchant only for a
// pair (or a session token's pair) the REST API has accepted; every other
// request, whatever it does, draws on the anonymous budgets and none of a
// merchant's. Each case sends the same request three times to budgets of
// their own: the anonymous budget (burst 1) admits one, the merchant's
// budget all three.
func TestAnonymousUntilAccepted(t *testing.T) {
	t.Parallel()
	sb := sandbox.New(sandbox.Options{})
	rc, err := restclient.New(restclient.Config{BaseURL: "http://sandbox.invalid", HTTPClient: &http.Client{Transport: inProcess{sb}},
		Limiter: restclient.NewLimiter(restclient.LimiterConfig{Unaccepted: restclient.UnacceptedConfig{CallsPerSecond: 20}})})
	if err != nil {
		t.Fatal(err)
	}
	biz := sb.Businesses()
	accepted := restclient.Credentials{APIKey: biz[0].APIKey, APISecret: biz[0].APISecret}
	notYet := restclient.Credentials{APIKey: biz[1].APIKey, APISecret: biz[1].APISecret} // real, never called
	refused := restclient.Credentials{APIKey: "ak_test_refused", APISecret: "sk_test_refused"}
	call := func(c restclient.Credentials) error {
		_, err := rc.ListPayments(restclient.WithCredentials(context.Background(), c), restclient.ListParams{Limit: 1})
		return err
	}
	if err := call(accepted); err != nil {
		t.Fatalf("the accepted pair's call: %v", err)
	}
	if err := call(refused); restclient.KindOf(err) != restclient.KindUnauthorized {
		t.Fatalf("the refused pair's call: %v, want UNAUTHENTICATED", err)
	}
	// Tokens: "tok-<key>" carries that pair (Verify stands for the keyring).
	pairs := map[string]restclient.Credentials{"tok-accepted": accepted, "tok-notyet": notYet}
	read, _ := gqlhttp.Bearer(gqlhttp.BearerConfig{
		Verify: func(tok string) (sessiontoken.Claims, error) {
			p, ok := pairs[tok]
			if !ok {
				return sessiontoken.Claims{}, sessiontoken.ErrMalformed
			}
			return sessiontoken.Claims{Credentials: sessiontoken.Credentials(p), Scope: sessiontoken.AllReads()}, nil
		},
		WithScope: func(ctx context.Context, _ sessiontoken.Scope) context.Context { return ctx },
		KeyHeader: restclient.HeaderAPIKey, SecretHeader: restclient.HeaderAPISecret,
		Refuse: func(w http.ResponseWriter, _ *http.Request, status int, _, _ string) { w.WriteHeader(status) },
	})
	pair := func(c restclient.Credentials) http.Header {
		h := http.Header{}
		h.Set(restclient.HeaderAPIKey, c.APIKey)
		h.Set(restclient.HeaderAPISecret, c.APISecret)
		return h
	}
	for _, tc := range []struct {
		name     string
		h        http.Header
		merchant bool
		who      string // the anonymous refusal's words
	}{
		{"no credentials", http.Header{}, false, "without credentials"},
		{"an invented pair", pair(restclient.Credentials{APIKey: "ak_test_invented", APISecret: "sk_test_invented"}), false, "not accepted yet"},
		{"a real pair no REST call has proven yet", pair(notYet), false, "not accepted yet"},
		{"a pair the REST API refused", pair(refused), false, "not accepted yet"},
		{"an accepted pair", pair(accepted), true, ""},
		{"a session token of an accepted pair", http.Header{"Authorization": {"Bearer tok-accepted"}}, true, ""},
		{"a session token of a pair not yet accepted", http.Header{"Authorization": {"Bearer tok-notyet"}}, false, "not accepted yet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			merchantL, err := ratelimit.New(ratelimit.DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			anonL, err := ratelimit.New(ratelimit.Config{RequestsPerSecond: 1, RequestsBurst: 1})
			if err != nil {
				t.Fatal(err)
			}
			addrL, err := ratelimit.New(ratelimit.Config{RequestsPerSecond: 1, RequestsBurst: 100})
			if err != nil {
				t.Fatal(err)
			}
			var h http.Handler = http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
			h = gqlhttp.NewAdmission(gqlhttp.AdmissionConfig{
				Merchants: merchantL, AnonymousAddress: addrL, Anonymous: anonL, Merchant: rc.Merchant,
			}).Middleware(h)
			h = gqlhttp.Credentials(read(h))
			served, merchantCharged := 0, 0
			var refusal string
			for range 3 {
				req := httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader(`{"query":"{ __typename }"}`))
				req.Header = tc.h.Clone()
				req.Header.Set("Content-Type", "application/json")
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				switch rec.Code {
				case http.StatusOK:
					served++
				case http.StatusTooManyRequests:
					refusal = rec.Body.String()
				default:
					t.Fatalf("status %d: %s", rec.Code, rec.Body)
				}
				if rec.Header().Get("RateLimit-Policy") != "" {
					merchantCharged++
				}
			}
			if tc.merchant {
				if served != 3 || merchantCharged != 3 {
					t.Fatalf("served %d of 3, %d charged to the merchant's budget; want a merchant's 3 and 3", served, merchantCharged)
				}
				return
			}
			if served != 1 || merchantCharged != 0 {
				t.Fatalf("served %d of 3, %d charged to a merchant's budget; want the anonymous budget's 1 and none", served, merchantCharged)
			}
			if !strings.Contains(refusal, `"RATE_LIMITED"`) || !strings.Contains(refusal, tc.who) {
				t.Errorf("refusal %s, want RATE_LIMITED naming requests %q", refusal, tc.who)
			}
		})
	}
}
