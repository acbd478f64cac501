package gateway_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"paygraph/gateway"
	"paygraph/internal/gqltest"
	"paygraph/internal/testenv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"paygraph/sandbox"
)

func TestQueryLimits(t *testing.T) {
	t.Parallel()
	g := startGateway(t, setup{})
	b := g.Biz[0]
	id := g.Sandbox.Payments(b.APIKey)[0].ID
	var bomb strings.Builder
	bomb.WriteString("{")
	for i := range 5000 {
		fmt.Fprintf(&bomb, " a%d: payment(id: %q) { id }", i, id)
	}
	bomb.WriteString("}")
	deep := "{ payments { nodes { customer { name } } } }"
	for range 20 {
		deep = strings.Replace(deep, "customer { name }", "customer { name __typename }", 1)
	}
	fragments := `query { ...A } fragment A on Query { payment(id: "` + id + `") { ...B ...B ...B ...B } } fragment B on Payment { id status customer { name email phone address city } }`

	for _, tc := range []struct {
		name, query, code string
		env               map[string]string
	}{
		{"5000 aliases", bomb.String(), "", nil},
		{"too deep", `{ checkoutSession(id: "x") { payment { customer { name } } } }`, "DEPTH_LIMIT_EXCEEDED", map[string]string{"Config.MaxDepth": "3"}},
		{"too many fields through fragments", fragments, "FIELD_LIMIT_EXCEEDED", map[string]string{"Config.MaxFields": "20"}},
		{"complexity of a big list", `{ payments(first: 100) { nodes { id customer { address } } edges { node { id customer { address } } } } }`, "COMPLEXITY_LIMIT_EXCEEDED", map[string]string{"MAX_COMPLEXITY": "100"}}, // 1 page + 100 details
		{"query too long", `{ payments(first: 1) { nodes { id } } }` + strings.Repeat(" ", 2000), "QUERY_TOO_LARGE", map[string]string{"Config.MaxQueryLength": "1024"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := startGateway(t, setup{env: tc.env})
			g.Sandbox.ResetCalls()
			r := g.Post(t, creds(b), tc.query, nil)
			if len(r.Errors) == 0 {
				t.Fatalf("accepted: %.200s", r.Data)
			}
			if tc.code != "" {
				r.WantCode(t, tc.code)
			}
			if r.Data != nil && string(r.Data) != "null" {
				t.Errorf("data %.200s", r.Data)
			}
			if n := g.Sandbox.CallCount(""); n != 0 {
				t.Errorf("%d REST calls", n)
			}
		})
	}

	// The default limits still let a reasonable query and the GraphiQL
	// introspection query through.
	r := g.Post(t, creds(b), `{ payments(first: 100) { edges { cursor node { id customer { address } } } pageInfo { endCursor } } }`, nil)
	r.WantNoErrors(t)
	r = g.Post(t, nil, gqltest.IntrospectionQuery, nil)
	r.WantNoErrors(t)
}

func TestBodyLimit(t *testing.T) {
	t.Parallel()
	g := startGateway(t, setup{env: map[string]string{"MAX_BODY_BYTES": "4096"}})
	body, _ := json.Marshal(map[string]any{"query": "{ __typename }", "variables": map[string]string{"pad": strings.Repeat("x", 10000)}})
	r := g.Send(t, http.MethodPost, "/graphql", creds(g.Biz[0]), body)
	if r.Status != http.StatusRequestEntityTooLarge {
		t.Errorf("status %d", r.Status)
	}
	r.WantCode(t, "BAD_USER_INPUT")

	// A body with no declared length is cut off while it is read.
	req, _ := http.NewRequest(http.MethodPost, g.URL+"/graphql", io.MultiReader(bytes.NewReader(body)))
	req.Header.Set("Content-Type", "application/json")
	req.ContentLength = -1
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode < 400 {
		t.Errorf("chunked oversized body: status %d", resp.StatusCode)
	}
}

func TestCORS(t *testing.T) {
	t.Parallel()
	shop := "https://shop.example.com"
	for _, tc := range []struct {
		name, configured, origin string
		allowed                  bool
	}{
		{"none configured", "", shop, false},
		{"configured", shop + ", https://admin.example.com", shop, true},
		{"other origin", shop, "https://evil.example.net", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := startGateway(t, setup{env: map[string]string{"CORS_ALLOWED_ORIGINS": tc.configured}})
			pre, _ := http.NewRequest(http.MethodOptions, g.URL+"/graphql", nil)
			pre.Header.Set("Origin", tc.origin)
			pre.Header.Set("Access-Control-Request-Method", "POST")
			pre.Header.Set("Access-Control-Request-Headers", "content-type, x-api-key, x-api-secret")
			resp, err := http.DefaultClient.Do(pre)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			gotOrigin := resp.Header.Get("Access-Control-Allow-Origin")
			if tc.allowed {
				hdrs := strings.ToLower(resp.Header.Get("Access-Control-Allow-Headers"))
				if gotOrigin != tc.origin || !strings.Contains(hdrs, "x-api-key") || !strings.Contains(hdrs, "x-api-secret") {
					t.Errorf("preflight: allow-origin %q, allow-headers %q", gotOrigin, hdrs)
				}
			} else if gotOrigin != "" {
				t.Errorf("preflight allowed origin %q", gotOrigin)
			}

			g.Sandbox.ResetCalls()
			h := creds(g.Biz[0])
			h.Set("Origin", tc.origin)
			body := []byte(`{"query":"{ payments(first: 1) { nodes { id } } }"}`)
			req, _ := http.NewRequest(http.MethodPost, g.URL+"/graphql", bytes.NewReader(body))
			req.Header = h
			req.Header.Set("Content-Type", "application/json")
			resp, err = http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if tc.allowed != (resp.StatusCode == http.StatusOK) || tc.allowed != (g.Sandbox.CallCount("") == 1) {
				t.Errorf("request from %s: status %d, %d REST calls", tc.origin, resp.StatusCode, g.Sandbox.CallCount(""))
			}
		})
	}
}

func TestAPQ(t *testing.T) {
	t.Parallel()
	g := startGateway(t, setup{})
	h := creds(g.Biz[0])
	query := `{ payments(first: 2) { nodes { id } } }`
	sum := sha256.Sum256([]byte(query))
	hash := hex.EncodeToString(sum[:])
	ext := func(h string) map[string]any {
		return map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": h}}
	}
	send := func(body map[string]any) *gqltest.Response {
		raw, _ := json.Marshal(body)
		return g.Send(t, http.MethodPost, "/graphql", h, raw)
	}

	r := send(map[string]any{"extensions": ext(hash)})
	if len(r.Errors) != 1 || r.Errors[0].Message != "PersistedQueryNotFound" {
		t.Fatalf("hash only, unknown: %+v", r.Errors)
	}
	r = send(map[string]any{"query": query, "extensions": ext(hash)})
	r.WantNoErrors(t)
	r = send(map[string]any{"extensions": ext(hash)})
	r.WantNoErrors(t)
	if !strings.Contains(string(r.Data), "pay_prod_") {
		t.Errorf("hash only, registered: %s", r.Data)
	}
	// Over GET too, as Apollo clients send it.
	q := url.Values{"extensions": {fmt.Sprintf(`{"persistedQuery":{"version":1,"sha256Hash":%q}}`, hash)}}
	r = g.Send(t, http.MethodGet, "/graphql?"+q.Encode(), h, nil)
	r.WantNoErrors(t)

	r = send(map[string]any{"query": `{ payments(first: 1) { nodes { id } } }`, "extensions": ext(hash)})
	if len(r.Errors) == 0 || !strings.Contains(r.Errors[0].Message, "provided APQ hash does not match query") {
		t.Fatalf("mismatched hash: %+v", r.Errors)
	}
}

func TestGET(t *testing.T) {
	t.Parallel()
	g := startGateway(t, setup{})
	h := creds(g.Biz[0])
	q := url.Values{"query": {`query($n: Int) { payments(first: $n) { nodes { id } } }`}, "variables": {`{"n": 2}`}}
	r := g.Send(t, http.MethodGet, "/graphql?"+q.Encode(), h, nil)
	r.WantNoErrors(t)
	if strings.Count(string(r.Data), "pay_prod_") != 2 {
		t.Errorf("GET query: %s", r.Data)
	}
	q = url.Values{"query": {`mutation { __typename }`}}
	g.Sandbox.ResetCalls()
	r = g.Send(t, http.MethodGet, "/graphql?"+q.Encode(), h, nil)
	if len(r.Errors) == 0 || r.Status == http.StatusOK && r.Data != nil && string(r.Data) != "null" {
		t.Errorf("GET mutation accepted: %d %s %+v", r.Status, r.Data, r.Errors)
	}
}

// panicking stands in for a bug: every REST call panics.
type panicking struct{}

func (panicking) RoundTrip(*http.Request) (*http.Response, error) { panic("bug in a REST call") }

func TestPanicIsInternalError(t *testing.T) {
	t.Parallel()
	var logs testenv.LockedBuffer
	gw := startGateway(t, setup{restRT: panicking{}, logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	r := gw.Post(t, anyCreds, `{ payments(first: 1) { nodes { id } } payment(id: "pay_prod_1") { id }
		nodes(ids: ["pay_prod_2", "pay_prod_3", "pl_4"]) { id } }`, nil)
	if len(r.Errors) != 5 {
		t.Fatalf("errors %+v", r.Errors)
	}
	for _, e := range r.Errors {
		if e.Extensions["code"] != "INTERNAL_SERVER_ERROR" || e.Message != "internal error" {
			t.Errorf("error %+v", e)
		}
	}
	if !strings.Contains(logs.String(), "panic") || !strings.Contains(logs.String(), "goroutine") {
		t.Errorf("the stack should be logged: %s", logs.String())
	}
}

func TestGracefulShutdown(t *testing.T) {
	sb := sandbox.New(sandbox.Options{})
	sb.SetLatency(700 * time.Millisecond)
	restLn, _ := net.Listen("tcp", "127.0.0.1:0")
	restSrv := &http.Server{Handler: sb}
	go func() { _ = restSrv.Serve(restLn) }()
	t.Cleanup(func() { restSrv.Close() })

	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cfg, err := gateway.LoadConfig(nil, func(k string) string {
		return map[string]string{"PORT": fmt.Sprint(port), "REST_BASE_URL": "http://" + restLn.Addr().String(), "SHUTDOWN_GRACE": "10s"}[k]
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	exited := make(chan error, 1)
	go func() { exited <- runGateway(ctx, cfg) }()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitFor(t, func() bool {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	})

	var slow atomic.Value
	done := make(chan struct{})
	go func() {
		defer close(done)
		g := newTestGateway(base)
		slow.Store(g.Post(t, creds(sb.Businesses()[0]), `{ payments(first: 1) { nodes { id } } }`, nil))
	}()
	waitFor(t, func() bool { return sb.CallCount("") == 1 })
	stop()
	// New connections are refused once shutdown starts.
	waitFor(t, func() bool {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
		}
		return err != nil
	})
	<-done
	r := slow.Load().(*gqltest.Response)
	r.WantNoErrors(t)
	if !strings.Contains(string(r.Data), "pay_prod_") {
		t.Errorf("in-flight request: %s", r.Data)
	}
	if err := <-exited; err != nil {
		t.Errorf("run: %v", err)
	}
}

// GraphiQL is pre-filled with the demo credentials only in sandbox mode;
// in front of a real REST API the page holds nothing of anyone's.
func TestGraphiQLPrefillOnlyInSandboxMode(t *testing.T) {
	page := func(t *testing.T, base string) string {
		t.Helper()
		resp, err := http.Get(base + "/")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Content-Type"), "text/html") {
			t.Fatalf("GET /: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		return string(body)
	}
	t.Run("sandbox mode: pre-filled", func(t *testing.T) {
		demo := sandbox.New(sandbox.Options{}).Businesses()[0]
		p := page(t, startGateway(t, setup{process: true}).URL)
		for _, want := range []string{demo.APIKey, demo.APISecret, "payments(first: 5)"} {
			if !strings.Contains(p, want) {
				t.Errorf("the page lacks %q:\n%s", want, p)
			}
		}
	})
	t.Run("real backend: not pre-filled", func(t *testing.T) {
		p := page(t, startGateway(t, setup{}).URL) // a configured REST_BASE_URL
		for _, unwanted := range []string{"ak_test_", "sk_test_", "payments("} {
			if strings.Contains(p, unwanted) {
				t.Errorf("the page holds %q:\n%s", unwanted, p)
			}
		}
	})
}
