package gateway_test

// The edge's rate-limit charge on every transport (issue 21): the charge
// of an operation's REST-call estimate is made by gqlhttp's operation
// extension, not by graph, so each transport is checked for its refusal.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"paygraph/internal/gqltest"
)

// TestRateLimitEveryTransport: once a merchant's REST-call budget is
// spent, its next operation is refused RATE_LIMITED with
// extensions.retryAfter and no REST call, over GET, SSE, a @defer stream
// and a WebSocket operation alike.
func TestRateLimitEveryTransport(t *testing.T) {
	g := startGateway(t, setup{env: map[string]string{
		"RATE_LIMIT_REST_CALLS_PER_SECOND": "1", "Config.RateLimitRESTBurst": "5", "MAX_COMPLEXITY": "5",
		"RATE_LIMIT_REQUESTS_PER_SECOND": "0",
	}})
	biz := g.Biz[0]
	c := gqltest.Client{URL: g.URL, Forbidden: []string{biz.APISecret}}
	a := gqltest.Headers(biz.APIKey, biz.APISecret)
	c.Post(t, a, `{ payments(first: 4) { nodes { id customer { address } } } }`, nil).WantNoErrors(t) // 5 REST calls: the burst
	pay := g.Sandbox.Payments(biz.APIKey)[0].ID
	query := `{ payment(id: "` + pay + `") { id status } }`

	// refused reads an answer's body (JSON, or the first event or part of
	// a stream) and says whether it holds RATE_LIMITED with retryAfter.
	refused := func(t *testing.T, body string) {
		t.Helper()
		i := strings.Index(body, `"RATE_LIMITED"`)
		if i < 0 || !strings.Contains(body, `"retryAfter"`) {
			t.Fatalf("no RATE_LIMITED with retryAfter in %.400s", body)
		}
	}
	send := func(t *testing.T, req *http.Request) string {
		t.Helper()
		req.Header.Set("X-Api-Key", biz.APIKey)
		req.Header.Set("X-Api-Secret", biz.APISecret)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := http.DefaultClient.Do(req.WithContext(ctx))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return string(b)
	}
	post := func(accept, q string) *http.Request {
		body, _ := json.Marshal(map[string]any{"query": q})
		req, _ := http.NewRequest(http.MethodPost, g.URL+"/graphql", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", accept)
		return req
	}
	for _, tc := range []struct {
		name string
		run  func(t *testing.T) string
	}{
		{"GET", func(t *testing.T) string {
			req, _ := http.NewRequest(http.MethodGet, g.URL+"/graphql?"+url.Values{"query": {query}}.Encode(), nil)
			return send(t, req)
		}},
		{"SSE", func(t *testing.T) string { return send(t, post("text/event-stream", query)) }},
		{"@defer", func(t *testing.T) string {
			return send(t, post("multipart/mixed;deferSpec=20220824, application/json",
				`{ payment(id: "`+pay+`") { id ... @defer { status } } }`))
		}},
		{"WebSocket", func(t *testing.T) string {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			ws, err := wsOpen(t, ctx, g.URL, map[string]any{"x-api-key": biz.APIKey, "x-api-secret": biz.APISecret})
			if err != nil {
				t.Fatal(err)
			}
			next, errs := wsRun(t, ctx, ws, "1", map[string]any{"query": query})
			return string(next) + string(errs)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g.Sandbox.ResetCalls()
			refused(t, tc.run(t))
			if n := g.Sandbox.CallCount(""); n != 0 {
				t.Fatalf("a refused operation made %d REST calls", n)
			}
		})
	}
}
