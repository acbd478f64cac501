package observe

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"paygraph/internal/gqltest"
)

// clientTrace is the trace id the first request of runEndToEnd carries.
const clientTrace = "4bf92f3577b34da6a3ce929d0e0e4736"

// endToEnd is what one run of the five requests of runEndToEnd left:
// spans, metrics, log lines and what the REST API received.
type endToEnd struct {
	exp  *tracetest.InMemoryExporter
	rs   *restServer
	m    *Metrics
	logs syncBuffer
}

// runEndToEnd drives a gqlgen server (without generated code) wired with
// every piece of the package, over a fake REST API, with five requests
// (found, not found, anonymous, parse error, two calls of which one
// fails), each a named subtest checking the first error's code.
func runEndToEnd(t *testing.T) *endToEnd {
	t.Helper()
	e := &endToEnd{exp: useTestTracer(t), rs: newRESTServer(t), m: NewMetrics(wired(nil))}
	gw := httptest.NewServer(gateway(e.m, &e.logs, e.rs.URL))
	defer gw.Close()
	client := gqltest.Client{URL: gw.URL, Forbidden: []string{testSecret}}

	for _, tc := range []struct {
		name, body  string
		traceparent string
		wantCode    string // first error's code, "" none
	}{
		{"found", `{"query":"query GetPay($id: ID!) { payment(id: $id) { id status } hello }","variables":{"id":"pay_prod_abc"}}`,
			"00-" + clientTrace + "-00f067aa0ba902b7-01", ""},
		{"not found", `{"query":"query GetPay { payment(id: \"missing_pay_prod_x\") { id } }"}`, "", "NOT_FOUND"},
		{"anonymous", `{"query":"{ hello }"}`, "", ""},
		{"parse error", `{"query":"query Broken { payment(id: \"pay_prod_q\"","operationName":"Broken"}`, "", "GRAPHQL_PARSE_FAILED"},
		{"two calls", `{"query":"query Two { a: payment(id: \"pay_prod_1\") { id } b: payment(id: \"boom_1\") { id } }"}`, "", "UPSTREAM_ERROR"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{"X-Api-Key": {testKey}, "X-Api-Secret": {testSecret}}
			if tc.traceparent != "" {
				h.Set("traceparent", tc.traceparent)
			}
			r := client.Send(t, http.MethodPost, "/graphql?debug="+testSecret, h, []byte(tc.body))
			code := ""
			if codes := r.Codes(); len(codes) > 0 {
				code = codes[0]
			}
			if code != tc.wantCode {
				t.Errorf("code %q, want %q (%s)", code, tc.wantCode, r.Raw)
			}
		})
	}

	return e
}

// TestGatewayEndToEnd: each request gets the expected answer, and no
// answer holds the secret.
func TestGatewayEndToEnd(t *testing.T) { runEndToEnd(t) }

// TestGatewayEndToEndMetrics: the series of the five requests, and no id
// or credential in any label.
func TestGatewayEndToEndMetrics(t *testing.T) {
	e := runEndToEnd(t)
	// Metrics.
	out := scrape(t, e.m)
	assertSeries(t, out,
		`paygraph_graphql_requests_total{operation="GetPay",outcome="ok"} 1`,
		`paygraph_graphql_requests_total{operation="GetPay",outcome="NOT_FOUND"} 1`,
		`paygraph_graphql_requests_total{operation="anonymous",outcome="ok"} 1`,
		// No REST call served it: its name does not join the label set.
		`paygraph_graphql_requests_total{operation="other",outcome="GRAPHQL_PARSE_FAILED"} 1`,
		`paygraph_graphql_requests_total{operation="Two",outcome="UPSTREAM_ERROR"} 1`,
		`paygraph_graphql_request_duration_seconds_count{operation="GetPay"} 2`,
		`paygraph_rest_calls_total{endpoint="/api/v1/payments/{id}",status_class="2xx"} 2`,
		`paygraph_rest_calls_total{endpoint="/api/v1/payments/{id}",status_class="4xx"} 1`,
		`paygraph_rest_calls_total{endpoint="/api/v1/payments/{id}",status_class="5xx"} 1`,
		`paygraph_http_in_flight_requests 0`,
	)
	assertAbsent(t, "metrics", out, "pay_prod", "boom_1", "missing_", testSecret, testKey, "sk_test", "ak_test", "payment(id")

}

// TestGatewayEndToEndAccessLog: one line per request with the operation,
// outcome and REST call count, the client's trace id, and no secret.
func TestGatewayEndToEndAccessLog(t *testing.T) {
	e := runEndToEnd(t)
	// Access log: one line per request, with the REST call count.
	lines := logLines(t, e.logs.String())
	if len(lines) != 5 {
		t.Fatalf("%d log lines:\n%s", len(lines), e.logs.String())
	}
	for i, want := range []struct {
		op, outcome string
		calls       float64
	}{
		{"GetPay", "ok", 1}, {"GetPay", "NOT_FOUND", 1}, {"anonymous", "ok", 0},
		{"Broken", "GRAPHQL_PARSE_FAILED", 0}, {"Two", "UPSTREAM_ERROR", 2},
	} {
		t.Run(fmt.Sprintf("line %d %s %s", i, want.op, want.outcome), func(t *testing.T) {
			wantLine := map[string]any{"msg": "request", "operation": want.op, "outcome": want.outcome, "rest_calls": want.calls,
				"path": "/graphql", "method": "POST"}
			onlyWanted := cmpopts.IgnoreMapEntries(func(k string, _ any) bool { _, ok := wantLine[k]; return !ok })
			if diff := cmp.Diff(wantLine, lines[i], onlyWanted); diff != "" {
				t.Errorf("log line %d (-want +got):\n%s", i, diff)
			}
		})
	}
	if lines[0]["trace_id"] != clientTrace {
		t.Errorf("access line's trace_id %v, want the client's %s", lines[0]["trace_id"], clientTrace)
	}
	assertAbsent(t, "logs", e.logs.String(), testSecret, testKey, "R0d7", "debug=", "pay_prod")

}

// TestGatewayEndToEndSpans: the first request's span tree continues the
// client's trace, the REST call's traceparent continues it to the REST
// API, and no span holds an id or a credential.
func TestGatewayEndToEndSpans(t *testing.T) {
	e := runEndToEnd(t)
	// Spans: the first request's tree continues the client's trace, and
	// the REST call's traceparent continues it to the REST API.
	spans := e.exp.GetSpans()
	byID := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		byID[s.SpanContext.SpanID().String()] = s
		for _, a := range s.Attributes {
			if v := a.Value.String(); strings.Contains(v, testSecret) || strings.Contains(v, testKey) || strings.Contains(v, "query GetPay") {
				t.Errorf("span %q attribute %s = %q", s.Name, a.Key, v)
			}
		}
		if strings.Contains(s.Name, "pay_prod") || strings.Contains(s.Name, "boom") {
			t.Errorf("span name %q holds an id", s.Name)
		}
	}
	chain := func(s tracetest.SpanStub) []string {
		var names []string
		for {
			names = append([]string{s.Name}, names...)
			p, ok := byID[s.Parent.SpanID().String()]
			if !ok {
				return names
			}
			s = p
		}
	}
	var restSpans, fieldSpans []string
	for _, s := range spans {
		if s.SpanContext.TraceID().String() != clientTrace {
			continue
		}
		switch {
		case strings.HasPrefix(s.Name, "REST "):
			restSpans = append(restSpans, strings.Join(chain(s), " > "))
		case strings.HasPrefix(s.Name, "graphql.resolve "):
			fieldSpans = append(fieldSpans, strings.Join(chain(s), " > "))
		}
	}
	wantREST := "HTTP POST /graphql > graphql.operation GetPay > graphql.resolve Query.payment > REST GET /api/v1/payments/{id}"
	if len(restSpans) != 1 || restSpans[0] != wantREST {
		t.Errorf("REST spans of the first request: %q, want [%q]", restSpans, wantREST)
	}
	if len(fieldSpans) != 2 { // Query.payment and Query.hello; not Payment.id nor Payment.status
		t.Errorf("field spans: %q", fieldSpans)
	}
	tps, _ := e.rs.received()
	if len(tps) != 4 || !strings.HasPrefix(tps[0], "00-"+clientTrace+"-") {
		t.Errorf("traceparents at the REST API: %q", tps)
	}
	for _, s := range spans {
		if s.Name == "graphql.operation Two" && s.Status.Description != "UPSTREAM_ERROR" {
			t.Errorf("operation span status %+v", s.Status)
		}
	}
}
