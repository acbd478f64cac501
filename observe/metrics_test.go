package observe

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

func TestRESTTransportMetrics(t *testing.T) {
	rs := newRESTServer(t)
	m := NewMetrics(wired(nil))
	client := &http.Client{Transport: m.RESTTransport(nil)}
	ctx, stats := WithRequestStats(context.Background())

	canceled, cancel := context.WithCancel(ctx)
	cancel()
	expired, cancel2 := context.WithDeadline(ctx, time.Now().Add(-time.Second))
	defer cancel2()
	refused := refusedURL(t)

	for _, tc := range []struct {
		name, url string
		ctx       context.Context
		status    int // 0: a transport error
	}{
		{"list", rs.URL + "/api/v1/payments?limit=5&status=captured", ctx, 200},
		{"found", rs.URL + "/api/v1/payments/pay_prod_abc", ctx, 200},
		{"found again", rs.URL + "/api/v1/payments/pay_prod_def", ctx, 200},
		{"not found", rs.URL + "/api/v1/payments/missing_pay_prod_xyz", ctx, 404},
		{"server error", rs.URL + "/api/v1/payment-links/boom_plink_1", ctx, 500},
		{"session", rs.URL + "/api/v1/checkout/sessions/cs_test_777", ctx, 200},
		{"unknown route", rs.URL + "/internal/pay_prod_abc", ctx, 200},
		{"refused", refused + "/api/v1/checkout/sessions/cs_test_888", ctx, 0},
		{"canceled", rs.URL + "/api/v1/payments/pay_prod_c", canceled, 0},
		{"deadline", rs.URL + "/api/v1/payments/pay_prod_d", expired, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, err := get(tc.ctx, client, tc.url)
			if tc.status == 0 {
				if err == nil {
					t.Errorf("%s: no error (status %d)", tc.name, status)
				}
			} else if err != nil || status != tc.status {
				t.Errorf("%s: status %d, error %v; want %d", tc.name, status, err, tc.status)
			}
		})
	}

	out := scrape(t, m)
	assertSeries(t, out,
		`paygraph_rest_calls_total{endpoint="/api/v1/payments",status_class="2xx"} 1`,
		`paygraph_rest_calls_total{endpoint="/api/v1/payments/{id}",status_class="2xx"} 2`,
		`paygraph_rest_calls_total{endpoint="/api/v1/payments/{id}",status_class="4xx"} 1`,
		`paygraph_rest_calls_total{endpoint="/api/v1/payments/{id}",status_class="canceled"} 1`,
		`paygraph_rest_calls_total{endpoint="/api/v1/payments/{id}",status_class="timeout"} 1`,
		`paygraph_rest_calls_total{endpoint="/api/v1/payment-links/{id}",status_class="5xx"} 1`,
		`paygraph_rest_calls_total{endpoint="/api/v1/checkout/sessions/{id}",status_class="2xx"} 1`,
		`paygraph_rest_calls_total{endpoint="/api/v1/checkout/sessions/{id}",status_class="error"} 1`,
		`paygraph_rest_calls_total{endpoint="other",status_class="2xx"} 1`,
		`paygraph_rest_call_duration_seconds_count{endpoint="/api/v1/payments/{id}"} 5`,
		`paygraph_rest_call_duration_seconds_count{endpoint="/api/v1/payments"} 1`,
	)
	if !strings.Contains(out, "\ngo_goroutines ") || !strings.Contains(out, "\ngo_memstats_alloc_bytes ") {
		t.Error("Go runtime metrics missing")
	}
	if !strings.Contains(out, "\nprocess_") {
		t.Log("no process metrics (not supported on this OS?)")
	}
	assertAbsent(t, "metrics", out, "pay_prod", "plink_1", "cs_test", "missing_", "boom", "limit=", "captured",
		testSecret, testKey, "sk_test", "ak_test", "127.0.0.1")
	if got := stats.RESTCalls(); got != 10 {
		t.Errorf("RequestStats counted %d REST calls, want 10", got)
	}
}

// respond runs the metrics extension over one response of an operation.
func respond(ext graphql.HandlerExtension, ctx context.Context, opName string, op *ast.OperationDefinition, resp *graphql.Response) {
	ctx = graphql.WithOperationContext(ctx, &graphql.OperationContext{OperationName: opName, Operation: op})
	ext.(graphql.ResponseInterceptor).InterceptResponse(ctx, func(context.Context) *graphql.Response { return resp })
}

func TestGraphQLMetricsOutcomesAndBounding(t *testing.T) {
	t.Parallel()
	m := NewMetrics(wired(nil))
	ext := m.GraphQLExtension()
	// Requests the REST API served (a 2xx): their names may join the
	// label set (TestOperationLabelAdmission covers the others).
	served, stats := WithRequestStats(context.Background())
	stats.AddRESTSuccess()
	query := func(name string) *ast.OperationDefinition {
		return &ast.OperationDefinition{Name: name, Operation: ast.Query}
	}
	ok := &graphql.Response{Data: []byte(`{}`)}
	notFound := &graphql.Response{Errors: gqlerror.List{
		{Message: "no", Extensions: map[string]any{"code": "NOT_FOUND"}},
		{Message: "and", Extensions: map[string]any{"code": "UPSTREAM_ERROR"}},
	}}
	noCode := &graphql.Response{Errors: gqlerror.List{{Message: "x"}}}
	weirdCode := &graphql.Response{Errors: gqlerror.List{{Message: "x", Extensions: map[string]any{"code": "pay_prod_abc {}"}}}}

	for _, tc := range []struct {
		opName string
		op     *ast.OperationDefinition
		resp   *graphql.Response
	}{
		{"", query("GetPayment"), ok},
		{"", query("GetPayment"), notFound},
		{"", query(""), ok},
		{"", query(""), noCode},
		{"", query("Weird"), weirdCode},
		{"pay_prod_abc\"} 1\n", nil, noCode},           // an unparsed request's name from the client
		{"", query("a" + strings.Repeat("b", 64)), ok}, // 65 characters
	} {
		respond(ext, served, tc.opName, tc.op, tc.resp)
	}
	// 100 distinct names are recorded in all; GetPayment and Weird are two.
	for i := 0; i < 98; i++ {
		respond(ext, served, "", query(fmt.Sprintf("Op%03d", i)), ok)
	}
	respond(ext, served, "", query("TheHundredAndFirst"), ok)
	respond(ext, served, "", query("Op000"), ok) // known names stay

	out := scrape(t, m)
	assertSeries(t, out,
		`paygraph_graphql_requests_total{operation="GetPayment",outcome="ok"} 1`,
		`paygraph_graphql_requests_total{operation="GetPayment",outcome="NOT_FOUND"} 1`,
		`paygraph_graphql_requests_total{operation="anonymous",outcome="ok"} 1`,
		`paygraph_graphql_requests_total{operation="anonymous",outcome="error"} 1`,
		`paygraph_graphql_requests_total{operation="Weird",outcome="error"} 1`,
		`paygraph_graphql_requests_total{operation="other",outcome="error"} 1`,
		`paygraph_graphql_requests_total{operation="other",outcome="ok"} 2`,
		`paygraph_graphql_requests_total{operation="Op097",outcome="ok"} 1`,
		`paygraph_graphql_requests_total{operation="Op000",outcome="ok"} 2`,
		`paygraph_graphql_request_duration_seconds_count{operation="GetPayment"} 2`,
	)
	assertAbsent(t, "metrics", out, "TheHundredAndFirst", "pay_prod", "abbbb")
	if n := strings.Count(out, "paygraph_graphql_requests_total{"); n != 105 {
		t.Errorf("%d request series, want 105", n)
	}
}

func TestGraphQLExtensionStoresStats(t *testing.T) {
	t.Parallel()
	m := NewMetrics(wired(nil))
	ctx, stats := WithRequestStats(context.Background())
	respond(m.GraphQLExtension(), ctx, "", &ast.OperationDefinition{Name: "ListPayments", Operation: ast.Query},
		&graphql.Response{Errors: gqlerror.List{{Message: "x", Extensions: map[string]any{"code": "RATE_LIMITED"}}}})
	if op, outcome := stats.Operation(); op != "ListPayments" || outcome != "RATE_LIMITED" {
		t.Errorf("stats: %q %q", op, outcome)
	}
	// No stats in the context: nothing breaks.
	respond(m.GraphQLExtension(), context.Background(), "", nil, &graphql.Response{})
	var nilStats *RequestStats
	nilStats.AddRESTCall()
	nilStats.SetOperation("a", "b")
	if nilStats.RESTCalls() != 0 {
		t.Error("nil stats count")
	}
}

func TestLoaderBreakerInFlight(t *testing.T) {
	t.Parallel()
	o := wired(nil)
	o.BreakerState = func() float64 { return 1 } // half-open
	m := NewMetrics(o)
	m.ObserveBatch("payment", 3)
	m.ObserveBatch("payment", 40)
	m.ObserveBatch("checkout_session", 1)
	m.ObserveBatch("pay_prod_abc", 1)

	release, entered := make(chan struct{}), make(chan struct{})
	h := m.InFlight(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		entered <- struct{}{}
		<-release
	}))
	done := make(chan struct{})
	go func() {
		h.ServeHTTP(nopWriter{}, &http.Request{})
		close(done)
	}()
	<-entered
	assertSeries(t, scrape(t, m), `paygraph_http_in_flight_requests 1`)
	close(release)
	<-done

	out := scrape(t, m)
	assertSeries(t, out,
		`paygraph_http_in_flight_requests 0`,
		`paygraph_loader_batch_size_count{loader="payment"} 2`,
		`paygraph_loader_batch_size_sum{loader="payment"} 43`,
		`paygraph_loader_batch_size_bucket{loader="payment",le="4"} 1`,
		`paygraph_loader_batch_size_count{loader="checkout_session"} 1`,
		`paygraph_loader_batch_size_count{loader="other"} 1`,
		`paygraph_circuit_breaker_state{upstream="rest"} 1`,
	)
	assertAbsent(t, "metrics", out, "pay_prod")
}

type nopWriter struct{}

func (nopWriter) Header() http.Header         { return http.Header{} }
func (nopWriter) Write(b []byte) (int, error) { return len(b), nil }
func (nopWriter) WriteHeader(int)             {}
