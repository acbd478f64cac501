package sessiontoken

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// tokenServer is the endpoint over real HTTP with a fake REST check that
// knows one good pair and counts the checks it is asked for.
type tokenServer struct {
	*httptest.Server
	kr       *Keyring
	clock    *fakeClock
	checks   atomic.Int64 // Verify and LookupCheckoutSession calls
	checkErr error        // what a check of the good pair returns

	mu     sync.Mutex
	bodies []string // every response body, searched for the secret
}

func newTokenServer(t *testing.T, configure func(*Options)) *tokenServer {
	t.Helper()
	ts := &tokenServer{clock: newClock()}
	ts.kr = keyring(t, ts.clock, testKeyA)
	opts := Options{
		Keyring: ts.kr,
		MaxTTL:  time.Hour,
		Verify: func(ctx context.Context, c Credentials) error {
			ts.checks.Add(1)
			if c != testCreds {
				return fmt.Errorf("REST 401: %w", ErrBadCredentials)
			}
			return ts.checkErr
		},
	}
	if configure != nil {
		configure(&opts)
	}
	ts.Server = httptest.NewServer(NewHandler(edge(opts)))
	t.Cleanup(ts.Close)
	t.Cleanup(func() {
		ts.mu.Lock()
		defer ts.mu.Unlock()
		for _, b := range ts.bodies {
			if strings.Contains(b, testCreds.APISecret) || strings.Contains(b, testCreds.APISecret[8:]) {
				t.Errorf("a response holds the secret: %s", b)
			}
		}
	})
	return ts
}

// call sends one request; headers may repeat a name.
type call struct {
	method      string // "" POST
	headers     [][2]string
	contentType string // "" application/json; "-" none
	body        string
}

// goodHeaders are the good pair.
var goodHeaders = [][2]string{{"x-api-key", testCreds.APIKey}, {"x-api-secret", testCreds.APISecret}}

func (ts *tokenServer) do(t *testing.T, c call) (*http.Response, []byte) {
	t.Helper()
	method := c.method
	if method == "" {
		method = http.MethodPost
	}
	req, err := http.NewRequest(method, ts.URL+"/auth/token", strings.NewReader(c.body))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range c.headers {
		req.Header.Add(h[0], h[1])
	}
	switch c.contentType {
	case "":
		req.Header.Set("Content-Type", "application/json")
	case "-":
	default:
		req.Header.Set("Content-Type", c.contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	ts.mu.Lock()
	ts.bodies = append(ts.bodies, string(body))
	ts.mu.Unlock()
	if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control = %q, want no-store", cc)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	return resp, body
}

// gqlErrors is the contract's error shape, decoded strictly.
type gqlErrors struct {
	Errors []struct {
		Message    string `json:"message"`
		Extensions struct {
			Code string `json:"code"`
		} `json:"extensions"`
	} `json:"errors"`
}

// decodeError checks body is exactly one contract error and returns it.
func decodeError(t *testing.T, body []byte) (code, msg string) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	var e gqlErrors
	if err := dec.Decode(&e); err != nil || len(e.Errors) != 1 {
		t.Fatalf("body %s is not {\"errors\":[{\"message\",\"extensions\":{\"code\"}}]}: %v", body, err)
	}
	return e.Errors[0].Extensions.Code, e.Errors[0].Message
}

// tokenResponse is the documented success shape, decoded strictly.
type tokenResponse struct {
	Token        string          `json:"token"`
	ExpiresAt    string          `json:"expiresAt"`
	Scope        json.RawMessage `json:"scope"`
	CustomerData string          `json:"customerData"`
}

func decodeToken(t *testing.T, body []byte) tokenResponse {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	var r tokenResponse
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("body %s is not {\"token\",\"expiresAt\",\"scope\",\"customerData\"}: %v", body, err)
	}
	return r
}

func TestHandlerMints(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		body      string
		wantTTL   time.Duration
		wantScope string
	}{
		{"all, default ttl", `{"scope":{"kind":"all"}}`, DefaultTTL, `{"kind":"all"}`},
		{"checkout session, 5 minutes", `{"ttlSeconds":300,"scope":{"kind":"checkoutSession","id":"REF123"}}`, 5 * time.Minute, `{"kind":"checkoutSession","id":"REF123"}`},
		{"payment, the maximum", `{"ttlSeconds":3600,"scope":{"kind":"payment","id":"pay_prod_1"}}`, time.Hour, `{"kind":"payment","id":"pay_prod_1"}`},
		{"one second", `{"ttlSeconds":1,"scope":{"kind":"all"}}`, time.Second, `{"kind":"all"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ts := newTokenServer(t, nil)
			resp, body := ts.do(t, call{headers: goodHeaders, body: tt.body})
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			r := decodeToken(t, body)
			if want := testStart.Add(tt.wantTTL).Format(DateTimeLayout); r.ExpiresAt != want {
				t.Errorf("expiresAt = %s, want %s", r.ExpiresAt, want)
			}
			if string(r.Scope) != tt.wantScope {
				t.Errorf("scope = %s, want %s", r.Scope, tt.wantScope)
			}
			if n := ts.checks.Load(); n != 1 {
				t.Errorf("the pair was checked %d times, want once", n)
			}
			c, err := ts.kr.Verify(r.Token)
			if err != nil {
				t.Fatalf("the minted token does not verify: %v", err)
			}
			if c.Credentials != testCreds || c.Scope.String() != mustScopeJSON(t, tt.wantScope).String() {
				t.Errorf("token carries other credentials or scope %v", c.Scope)
			}
			ts.clock.Advance(tt.wantTTL)
			if _, err := ts.kr.Verify(r.Token); !errors.Is(err, ErrExpired) {
				t.Errorf("after its ttl: %v, want ErrExpired", err)
			}
		})
	}
}

func mustScopeJSON(t *testing.T, s string) Scope {
	t.Helper()
	var sc Scope
	if err := json.Unmarshal([]byte(s), &sc); err != nil {
		t.Fatal(err)
	}
	return sc
}

func TestHandlerRefuses(t *testing.T) {
	t.Parallel()
	all := `{"scope":{"kind":"all"}}`
	tests := []struct {
		name       string
		call       call
		checkErr   error
		wantStatus int
		wantCode   string
		wantMsg    string
		wantChecks int64
	}{
		{"bad pair", call{headers: [][2]string{{"x-api-key", testCreds.APIKey}, {"x-api-secret", "sk_test_wrongwrongwrong"}}, body: all},
			nil, 401, "UNAUTHENTICATED", "refused this x-api-key and x-api-secret", 1},
		{"no headers", call{body: all}, nil, 401, "UNAUTHENTICATED", "needs the x-api-key and x-api-secret", 0},
		{"no secret", call{headers: goodHeaders[:1], body: all}, nil, 401, "UNAUTHENTICATED", "needs the", 0},
		{"empty secret", call{headers: [][2]string{goodHeaders[0], {"x-api-secret", ""}}, body: all}, nil, 401, "UNAUTHENTICATED", "needs the", 0},
		{"a bearer token instead", call{headers: [][2]string{{"Authorization", "Bearer v4.local.x"}}, body: all}, nil, 401, "UNAUTHENTICATED", "cannot mint another", 0},
		{"key twice", call{headers: append([][2]string{{"x-api-key", "ak_test_other"}}, goodHeaders...), body: all}, nil, 400, "BAD_USER_INPUT", "each be sent once", 0},
		{"secret twice", call{headers: append([][2]string{{"X-API-SECRET", "sk_test_other"}}, goodHeaders...), body: all}, nil, 400, "BAD_USER_INPUT", "each be sent once", 0},
		{"key too long", call{headers: [][2]string{{"x-api-key", strings.Repeat("k", MaxCredentialBytes+1)}, goodHeaders[1]}, body: all}, nil, 400, "BAD_USER_INPUT", "longer than", 0},
		{"GET", call{method: http.MethodGet, headers: goodHeaders}, nil, 405, "BAD_USER_INPUT", "POST only", 0},
		{"not JSON content type", call{headers: goodHeaders, contentType: "application/x-www-form-urlencoded", body: "ttlSeconds=1"}, nil, 415, "BAD_USER_INPUT", "must be JSON", 0},
		{"no content type", call{headers: goodHeaders, contentType: "-", body: all}, nil, 415, "BAD_USER_INPUT", "must be JSON", 0},
		{"bad JSON", call{headers: goodHeaders, body: `{"scope":`}, nil, 400, "BAD_USER_INPUT", "the body is not", 0},
		{"empty body", call{headers: goodHeaders}, nil, 400, "BAD_USER_INPUT", "the body is not", 0},
		{"two JSON values", call{headers: goodHeaders, body: all + all}, nil, 400, "BAD_USER_INPUT", "more than one JSON value", 0},
		{"unknown field", call{headers: goodHeaders, body: `{"scope":{"kind":"all"},"ttl":5}`}, nil, 400, "BAD_USER_INPUT", "unknown field", 0},
		{"no scope", call{headers: goodHeaders, body: `{"ttlSeconds":60}`}, nil, 400, "BAD_USER_INPUT", "scope is required", 0},
		{"unknown scope kind", call{headers: goodHeaders, body: `{"scope":{"kind":"root"}}`}, nil, 400, "BAD_USER_INPUT", "unknown scope kind", 0},
		{"scope id with a path", call{headers: goodHeaders, body: `{"scope":{"kind":"payment","id":"../x"}}`}, nil, 400, "BAD_USER_INPUT", "only letters", 0},
		{"ttl zero", call{headers: goodHeaders, body: `{"ttlSeconds":0,"scope":{"kind":"all"}}`}, nil, 400, "BAD_USER_INPUT", "positive", 0},
		{"ttl negative", call{headers: goodHeaders, body: `{"ttlSeconds":-5,"scope":{"kind":"all"}}`}, nil, 400, "BAD_USER_INPUT", "positive", 0},
		{"ttl fractional", call{headers: goodHeaders, body: `{"ttlSeconds":1.5,"scope":{"kind":"all"}}`}, nil, 400, "BAD_USER_INPUT", "the body is not", 0},
		{"ttl a string", call{headers: goodHeaders, body: `{"ttlSeconds":"60","scope":{"kind":"all"}}`}, nil, 400, "BAD_USER_INPUT", "the body is not", 0},
		{"ttl above the maximum is refused, not clamped", call{headers: goodHeaders, body: `{"ttlSeconds":3601,"scope":{"kind":"all"}}`}, nil, 400, "BAD_USER_INPUT", "above the maximum of 3600 (TOKEN_MAX_TTL)", 0},
		{"ttl overflowing int64", call{headers: goodHeaders, body: `{"ttlSeconds":99999999999999999999,"scope":{"kind":"all"}}`}, nil, 400, "BAD_USER_INPUT", "the body is not", 0},
		{"body over the limit", call{headers: goodHeaders, body: `{"scope":{"kind":"all"},"pad":"` + strings.Repeat("x", MaxRequestBytes) + `"}`}, nil, 413, "BAD_USER_INPUT", "larger than 4096 bytes", 0},
		{"REST rate limited", call{headers: goodHeaders, body: all}, fmt.Errorf("429: %w", ErrRateLimited), 429, "RATE_LIMITED", "retry later", 1},
		{"REST too slow", call{headers: goodHeaders, body: all}, fmt.Errorf("call: %w", context.DeadlineExceeded), 504, "UPSTREAM_TIMEOUT", "did not answer in time", 1},
		{"REST down", call{headers: goodHeaders, body: all}, errors.New("dial tcp: connection refused"), 502, "UPSTREAM_ERROR", "could not be checked", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ts := newTokenServer(t, nil)
			ts.checkErr = tt.checkErr
			resp, body := ts.do(t, tt.call)
			if resp.StatusCode != tt.wantStatus {
				t.Errorf("status %d, want %d: %s", resp.StatusCode, tt.wantStatus, body)
			}
			code, msg := decodeError(t, body)
			if code != tt.wantCode || !strings.Contains(msg, tt.wantMsg) {
				t.Errorf("error %s %q, want %s saying %q", code, msg, tt.wantCode, tt.wantMsg)
			}
			if n := ts.checks.Load(); n != tt.wantChecks {
				t.Errorf("%d REST checks, want %d", n, tt.wantChecks)
			}
			if strings.Contains(string(body), "connection refused") {
				t.Error("the check's own error text reached the caller")
			}
			if tt.wantStatus == 405 && resp.Header.Get("Allow") != "POST" {
				t.Errorf("Allow = %q, want POST", resp.Header.Get("Allow"))
			}
		})
	}
}

// A body of unknown length (chunked) is bounded while it is read: of a
// 1 MiB body the handler reads at most MaxRequestBytes+1 bytes.
func TestHandlerBoundsChunkedBody(t *testing.T) {
	t.Parallel()
	var read atomic.Int64
	h := NewHandler(edge(Options{Keyring: keyring(t, newClock(), testKeyA), Verify: func(context.Context, Credentials) error {
		t.Error("the pair was checked for a refused body")
		return nil
	}}))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = countingBody{r.Body, &read}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	body := io.MultiReader(strings.NewReader(`{"scope":{"kind":"all"},"pad":"`), strings.NewReader(strings.Repeat("x", 1<<20)))
	req, _ := http.NewRequest(http.MethodPost, srv.URL, body)
	if req.ContentLength != 0 {
		t.Fatal("test setup: the request has a length")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", testCreds.APIKey)
	req.Header.Set("x-api-secret", testCreds.APISecret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if code, msg := decodeError(t, b); resp.StatusCode != 413 || code != "BAD_USER_INPUT" || !strings.Contains(msg, "larger than 4096") {
		t.Errorf("status %d %s %q, want 413 BAD_USER_INPUT", resp.StatusCode, code, msg)
	}
	t.Logf("read %d bytes of a %d-byte body", read.Load(), 1<<20)
	if n := read.Load(); n > MaxRequestBytes+1 {
		t.Errorf("read %d bytes, more than the bound %d", n, MaxRequestBytes+1)
	}
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c countingBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func TestHandlerWithoutKeys(t *testing.T) {
	t.Parallel()
	verified := false
	h := NewHandler(edge(Options{Verify: func(context.Context, Credentials) error { verified = true; return nil }}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	for _, method := range []string{http.MethodPost, http.MethodGet} {
		t.Run(method, func(t *testing.T) {
			req, _ := http.NewRequest(method, srv.URL, strings.NewReader(`{"scope":{"kind":"all"}}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("x-api-key", testCreds.APIKey)
			req.Header.Set("x-api-secret", testCreds.APISecret)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("status %d, want 404", resp.StatusCode)
			}
			if code, msg := decodeError(t, body); code != "NOT_FOUND" || !strings.Contains(msg, "TOKEN_KEYS is not set") {
				t.Errorf("error %s %q, want NOT_FOUND saying TOKEN_KEYS is not set", code, msg)
			}
			if verified {
				t.Error("the pair was checked with tokens off")
			}
		})
	}
}

func TestHandlerLooksUpTheSession(t *testing.T) {
	t.Parallel()
	lookupOf := func(ts **tokenServer, ids CheckoutSessionIDs, err error) func(*Options) {
		return func(o *Options) {
			o.LookupCheckoutSession = func(ctx context.Context, c Credentials, idOrRef string) (CheckoutSessionIDs, error) {
				(*ts).checks.Add(1)
				if c != testCreds {
					return CheckoutSessionIDs{}, ErrBadCredentials
				}
				return ids, err // whatever the REST API answered
			}
		}
	}
	body := `{"scope":{"kind":"checkoutSession","id":"REF123"}}`
	t.Run("pinned: session by both names and its payment, nothing else, with no learning", func(t *testing.T) {
		var ts *tokenServer
		ts = newTokenServer(t, lookupOf(&ts, testSession, nil))
		resp, b := ts.do(t, call{headers: goodHeaders, body: body})
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		if n := ts.checks.Load(); n != 1 {
			t.Errorf("%d REST calls to mint, want 1 (the lookup checks the pair)", n)
		}
		r := decodeToken(t, b)
		if string(r.Scope) != `{"kind":"checkoutSession","id":"REF123"}` {
			t.Errorf("scope = %s", r.Scope)
		}
		c, err := ts.kr.Verify(r.Token)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := accessOf(c.Scope), (access{sessionPayment: true, byRef: true, byID: true}); got != want {
			t.Errorf("allows %+v, want %+v", got, want)
		}
		if _, ok := c.Scope.SessionToLearn(); ok {
			t.Error("a pinned scope asks to learn")
		}
	})
	tests := []struct {
		name       string
		ids        CheckoutSessionIDs
		err        error
		headers    [][2]string
		wantStatus int
		wantCode   string
	}{
		{"no such session", CheckoutSessionIDs{}, fmt.Errorf("REST 404: %w", ErrNoSuchSession), goodHeaders, 400, "BAD_USER_INPUT"},
		{"bad pair", testSession, nil, [][2]string{goodHeaders[0], {"x-api-secret", "sk_test_nope"}}, 401, "UNAUTHENTICATED"},
		{"REST answers another session", CheckoutSessionIDs{ID: "pay_prod_x", Reference: "REF123X", PaymentID: "pay_prod_y"}, nil, goodHeaders, 502, "UPSTREAM_ERROR"},
		{"REST answers ids that are not ids", CheckoutSessionIDs{ID: "pay_prod_x", Reference: "REF123", PaymentID: "../y"}, nil, goodHeaders, 502, "UPSTREAM_ERROR"},
		{"REST down", testSession, errors.New("EOF"), goodHeaders, 502, "UPSTREAM_ERROR"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var ts *tokenServer
			ts = newTokenServer(t, lookupOf(&ts, tt.ids, tt.err))
			resp, b := ts.do(t, call{headers: tt.headers, body: body})
			if resp.StatusCode != tt.wantStatus {
				t.Errorf("status %d, want %d: %s", resp.StatusCode, tt.wantStatus, b)
			}
			if code, _ := decodeError(t, b); code != tt.wantCode {
				t.Errorf("code %s, want %s", code, tt.wantCode)
			}
		})
	}
	t.Run("other scopes use Verify", func(t *testing.T) {
		var ts *tokenServer
		lookups := 0
		ts = newTokenServer(t, func(o *Options) {
			o.LookupCheckoutSession = func(context.Context, Credentials, string) (CheckoutSessionIDs, error) {
				lookups++
				return testSession, nil
			}
		})
		resp, b := ts.do(t, call{headers: goodHeaders, body: `{"scope":{"kind":"payment","id":"pay_prod_1"}}`})
		if resp.StatusCode != 200 || lookups != 0 || ts.checks.Load() != 1 {
			t.Errorf("status %d, %d lookups, %d Verify calls: %s", resp.StatusCode, lookups, ts.checks.Load(), b)
		}
	})
}

func TestHandlerOptions(t *testing.T) {
	t.Parallel()
	t.Run("Verify is required with keys", func(t *testing.T) {
		defer func() {
			if recover() == nil {
				t.Error("NewHandler without Verify did not panic")
			}
		}()
		NewHandler(edge(Options{Keyring: keyring(t, newClock(), testKeyA)}))
	})
	t.Run("header names and error writer are required", func(t *testing.T) {
		defer func() {
			if recover() == nil {
				t.Error("NewHandler without KeyHeader, SecretHeader, WriteError did not panic")
			}
		}()
		NewHandler(Options{Keyring: keyring(t, newClock(), testKeyA), Verify: func(context.Context, Credentials) error { return nil }})
	})
	t.Run("default ttl above the maximum is lowered to it", func(t *testing.T) {
		ts := newTokenServer(t, func(o *Options) { o.DefaultTTL, o.MaxTTL = time.Hour, 5*time.Minute })
		resp, b := ts.do(t, call{headers: goodHeaders, body: `{"scope":{"kind":"all"}}`})
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		if r := decodeToken(t, b); r.ExpiresAt != testStart.Add(5*time.Minute).Format(DateTimeLayout) {
			t.Errorf("expiresAt = %s, want 5 minutes on", r.ExpiresAt)
		}
	})
	t.Run("zero TTLs take the defaults", func(t *testing.T) {
		ts := newTokenServer(t, func(o *Options) { o.MaxTTL = 0 })
		resp, b := ts.do(t, call{headers: goodHeaders, body: fmt.Sprintf(`{"ttlSeconds":%d,"scope":{"kind":"all"}}`, int(DefaultMaxTTL/time.Second)+1)})
		if code, msg := decodeError(t, b); resp.StatusCode != 400 || code != "BAD_USER_INPUT" || !strings.Contains(msg, "3600") {
			t.Errorf("status %d %s %q, want 400 naming the default maximum 3600", resp.StatusCode, code, msg)
		}
	})
}

// The customer-data level: chosen with "customerData" beside the scope,
// the scope's default without it, refused above MaxCustomerData (and the
// default lowered to it); the token carries the level the answer names.
func TestHandlerCustomerData(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		max  CustomerData
		body string
		want string // the level answered and carried; "" for a refusal
	}{
		{"all, default", 0, `{"scope":{"kind":"all"}}`, "masked"},
		{"checkout session, default", 0, `{"scope":{"kind":"checkoutSession","id":"REF123"}}`, "masked"},
		{"payment, default", 0, `{"scope":{"kind":"payment","id":"pay_prod_1"}}`, "masked"},
		{"full asked", 0, `{"scope":{"kind":"all"},"customerData":"full"}`, "full"},
		{"none asked", 0, `{"scope":{"kind":"payment","id":"pay_prod_1"},"customerData":"none"}`, "none"},
		{"masked asked", 0, `{"customerData":"masked","scope":{"kind":"all"}}`, "masked"},
		{"default lowered to the maximum", CustomerDataNone, `{"scope":{"kind":"all"}}`, "none"},
		{"at the maximum", CustomerDataMasked, `{"scope":{"kind":"all"},"customerData":"masked"}`, "masked"},
		{"above the maximum", CustomerDataMasked, `{"scope":{"kind":"all"},"customerData":"full"}`, ""},
		{"unknown level", 0, `{"scope":{"kind":"all"},"customerData":"partial"}`, ""},
		{"not a string", 0, `{"scope":{"kind":"all"},"customerData":2}`, ""},
		{"null", 0, `{"scope":{"kind":"all"},"customerData":null}`, "masked"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ts := newTokenServer(t, func(o *Options) { o.MaxCustomerData = tt.max })
			resp, body := ts.do(t, call{headers: goodHeaders, body: tt.body})
			if tt.want == "" {
				if resp.StatusCode != http.StatusBadRequest {
					t.Fatalf("status %d, want 400: %s", resp.StatusCode, body)
				}
				if code, msg := decodeError(t, body); code != "BAD_USER_INPUT" || !strings.Contains(msg, "customerData") {
					t.Errorf("error %s %q does not name customerData", code, msg)
				}
				return
			}
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			r := decodeToken(t, body)
			if r.CustomerData != tt.want {
				t.Errorf("customerData = %q, want %q", r.CustomerData, tt.want)
			}
			c, err := ts.kr.Verify(r.Token)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Scope.CustomerData().String(); got != tt.want {
				t.Errorf("the token carries %q, want %q", got, tt.want)
			}
		})
	}
}
