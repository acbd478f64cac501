package observe

// The metrics' cached series (metrics.go) against the vectors asked
// directly, as the metrics were written before issue 25 cached them: the
// same series, names, labels and values on /metrics.

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/google/go-cmp/cmp"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// fixedTransport answers with resp or err.
type fixedTransport struct {
	resp *http.Response
	err  error
}

func (t fixedTransport) RoundTrip(*http.Request) (*http.Response, error) { return t.resp, t.err }

func TestSeriesCacheSameAsVectors(t *testing.T) {
	t.Parallel()
	type restEvent struct {
		url    string
		status int // 0: err
		err    error
	}
	rest := []restEvent{
		{"http://r/api/v1/payments/pay_prod_abc", 200, nil},
		{"http://r/api/v1/payments/pay_prod_def", 404, nil},
		{"http://r/api/v1/payments?limit=5", 200, nil},
		{"http://r/api/v1/payment-links/plink_1", 503, nil},
		{"http://r/api/v1/checkout/sessions/cs_1", 302, nil},
		{"http://r/api/v1/checkout/sessions/cs_2", 101, nil},
		{"http://r/api/v1/checkout/sessions/cs_3", 600, nil},
		{"http://r/internal/x", 200, nil},
		{"http://r/api/v1/payments/pay_prod_x", 0, context.DeadlineExceeded},
		{"http://r/api/v1/payments/pay_prod_y", 0, context.Canceled},
		{"http://r/api/v1/payments/pay_prod_z", 0, errors.New("connection refused")},
	}
	batches := []struct {
		loader string
		size   int
	}{{"payment", 3}, {"payment", 40}, {"checkout_session", 1}, {"pay_prod_abc", 2}, {"other", 5}}
	query := func(name string) *ast.OperationDefinition {
		return &ast.OperationDefinition{Name: name, Operation: ast.Query}
	}
	resp := func(code string) *graphql.Response {
		if code == "" {
			return &graphql.Response{Data: []byte(`{}`)}
		}
		return &graphql.Response{Errors: gqlerror.List{{Message: "x", Extensions: map[string]any{"code": code}}}}
	}
	ops := []struct {
		opName string
		op     *ast.OperationDefinition
		code   string
	}{
		{"", query("GetPayment"), ""},
		{"", query("GetPayment"), "NOT_FOUND"},
		{"", query("ListPayments"), "RATE_LIMITED"},
		{"", query(""), ""},
		{"", query(""), "weird code"},
		{"", query(testSecret), ""},
		{"Named", nil, "GRAPHQL_PARSE_FAILED"},
		{"", query("unparsed"), ""},
	}
	refused := []string{"RATE_LIMITED", "UNAUTHENTICATED", "not plain"}

	m, ref := NewMetrics(wired(nil)), NewMetrics(wired(nil))
	served, stats := WithRequestStats(context.Background())
	stats.AddRESTSuccess()
	const rounds = 3
	// m through its cached paths, from goroutines at once.
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				for _, e := range rest {
					var r *http.Response
					if e.status != 0 {
						r = &http.Response{StatusCode: e.status}
					}
					req, _ := http.NewRequest(http.MethodGet, e.url, nil)
					_, _ = m.RESTTransport(fixedTransport{r, e.err}).RoundTrip(req)
				}
				for _, b := range batches {
					m.ObserveBatch(b.loader, b.size)
				}
				for _, o := range ops {
					respond(m.GraphQLExtension(), served, o.opName, o.op, resp(o.code))
				}
				for _, c := range refused {
					m.CountRefused(served, c)
				}
			}
		}()
	}
	wg.Wait()
	// ref through the vectors, one label look-up a call as before.
	for range 4 * rounds {
		for _, e := range rest {
			req, _ := http.NewRequest(http.MethodGet, e.url, nil)
			var r *http.Response
			if e.status != 0 {
				r = &http.Response{StatusCode: e.status}
			}
			ep := ref.opts.routeOf(req.URL)
			ref.restDuration.WithLabelValues(ep).Observe(0)
			ref.restCalls.WithLabelValues(ep, statusClassNames[statusClass(context.Background(), r, e.err)]).Inc()
		}
		for _, b := range batches {
			l := b.loader
			if l != "payment" && l != "payment_link" && l != "checkout_session" {
				l = "other"
			}
			ref.batchSize.WithLabelValues(l).Observe(float64(b.size))
		}
		for _, o := range ops {
			raw := o.opName
			if o.op != nil {
				raw = o.op.Name
			}
			ref.namesMu.Lock()
			label := ref.operationLabel(served, ref.opts.LogName(raw))
			ref.namesMu.Unlock()
			ref.gqlRequests.WithLabelValues(label, Outcome(resp(o.code))).Inc()
			ref.gqlDuration.WithLabelValues(label).Observe(0)
		}
		for _, c := range refused {
			outcome := c
			if !plainCode(c) {
				outcome = OutcomeError
			}
			ref.gqlRequests.WithLabelValues(OperationUnparsed, outcome).Inc()
		}
	}
	got, want := paygraphSeries(scrape(t, m)), paygraphSeries(scrape(t, ref))
	if len(want) < 30 {
		t.Fatalf("only %d series: %v", len(want), want)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("/metrics (-vectors +cached):\n%s", diff)
	}
	assertAbsent(t, "metrics", strings.Join(got, "\n"), testSecret, "pay_prod")
}

// paygraphSeries are the paygraph_ lines of a scrape, the time-valued
// ones (the durations' sums and buckets) left out: their counts stay.
func paygraphSeries(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "paygraph_") && !strings.Contains(l, "duration_seconds_sum") && !strings.Contains(l, "duration_seconds_bucket") {
			lines = append(lines, l)
		}
	}
	return lines
}
