package observe

import (
	"context"
	"errors"
	"maps"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// MaxOperationNames is how many operation names the metrics record; later ones
// are "other". A name joins only from a request with a REST call answered 2xx
// (so callers without valid credentials cannot fill the set), never when it
// holds or looks like a credential.
const MaxOperationNames = 100

// The fixed label values.
const (
	OperationAnonymous = "anonymous" // an operation without a name
	OperationOther     = "other"     // a name not in the label set (MaxOperationNames), not a plain name, or like a credential
	OperationUnparsed  = "unparsed"  // a request refused before its body was read as GraphQL
	OutcomeOK          = "ok"
	OutcomeError       = "error" // an error without a (plain) extensions.code
	EndpointOther      = "other" // a REST path that is none of the known routes
)

// Metrics holds the gateway's Prometheus series, on a registry of its own
// (with Go and process collectors).
type Metrics struct {
	reg *prometheus.Registry

	gqlRequests  *prometheus.CounterVec
	gqlDuration  *prometheus.HistogramVec
	restCalls    *prometheus.CounterVec
	restDuration *prometheus.HistogramVec
	batchSize    *prometheus.HistogramVec
	inFlight     prometheus.Gauge
	// An operation's REST calls estimated, made, and estimated but unmade.
	opEstimated, opMade, opUnmade prometheus.Histogram

	opts Options
	// The batch size series by loader, taken at first use: on /metrics only once used, hashed and locked once.
	loaders map[string]func() prometheus.Observer
	// Under namesMu: the names admitted as labels, and the GraphQL series by label (and outcome).
	namesMu   sync.Mutex
	names     map[string]struct{}
	durations map[string]prometheus.Observer
	requests  map[[2]string]prometheus.Counter
	// The REST calls' series by endpoint, copied on write under restMu.
	rest   atomic.Pointer[map[string]*restSeries]
	restMu sync.Mutex
}

// restSeries are the series of one REST endpoint label.
type restSeries struct {
	duration func() prometheus.Observer                                // taken when first used, as loaders'
	calls    [len(statusClassNames)]atomic.Pointer[prometheus.Counter] // by statusClass's index, nil until first used
}

var durationBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

// restCallsHistogram's buckets span a record to a page with its joins (101)
// and MAX_COMPLEXITY (500).
func restCallsHistogram(name, help string) prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: "REST calls per query operation, " + help,
		Buckets: []float64{0, 1, 2, 5, 10, 20, 50, 101, 200, 500}})
}

// NewMetrics returns the gateway's metrics on a fresh registry, told o.
func NewMetrics(o Options) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), opts: o, names: make(map[string]struct{}),
		durations: make(map[string]prometheus.Observer), requests: make(map[[2]string]prometheus.Counter),
		loaders: make(map[string]func() prometheus.Observer, len(o.LoaderNames)+1),
		gqlRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "paygraph_graphql_requests_total",
			Help: "GraphQL requests by operation name (bounded) and outcome (ok, or the first error's extensions.code)."},
			[]string{"operation", "outcome"}),
		gqlDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "paygraph_graphql_request_duration_seconds",
			Help:    "Time from the start of a GraphQL request to its response, by operation name (bounded).",
			Buckets: durationBuckets}, []string{"operation"}),
		restCalls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "paygraph_rest_calls_total",
			Help: "REST API calls (attempts) by route pattern and status class (2xx..5xx, error, timeout, canceled)."},
			[]string{"endpoint", "status_class"}),
		restDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "paygraph_rest_call_duration_seconds",
			Help:    "Time from sending a REST API call to its response headers (or failure), by route pattern.",
			Buckets: durationBuckets}, []string{"endpoint"}),
		batchSize: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "paygraph_loader_batch_size",
			Help: "Keys per loader batch, by loader.", Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128}}, []string{"loader"}),
		inFlight:    prometheus.NewGauge(prometheus.GaugeOpts{Name: "paygraph_http_in_flight_requests", Help: "HTTP requests being served."}),
		opEstimated: restCallsHistogram("paygraph_operation_rest_calls_estimated", "estimated before any was made (the cost receipt's estimated)."),
		opMade:      restCallsHistogram("paygraph_operation_rest_calls_made", "made (the cost receipt's made; retries not counted)."),
		opUnmade:    restCallsHistogram("paygraph_operation_rest_calls_unmade", "estimated and not made (estimated - made, never negative)."),
	}
	for _, n := range append([]string{"other"}, o.LoaderNames...) {
		m.loaders[n] = sync.OnceValue(func() prometheus.Observer { return m.batchSize.WithLabelValues(n) })
	}
	m.rest.Store(&map[string]*restSeries{})
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.gqlRequests, m.gqlDuration, m.restCalls, m.restDuration, m.batchSize, m.inFlight,
		m.opEstimated, m.opMade, m.opUnmade)
	if o.BreakerState != nil {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "paygraph_circuit_breaker_state",
			Help:        "Circuit breaker state by upstream: 0 closed, 1 half-open, 2 open.",
			ConstLabels: prometheus.Labels{"upstream": "rest"}}, o.BreakerState))
	}
	for kind, read := range o.Connections {
		labels := prometheus.Labels{"kind": kind}
		m.reg.MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "paygraph_connections", ConstLabels: labels,
				Help: "Client connections the replica holds open, by kind (live: WebSocket and SSE; http: the listener's)."},
				func() float64 { n, _ := read(); return float64(n) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "paygraph_connections_limit", ConstLabels: labels,
				Help: "The replica's cap on client connections, by kind (live: half of HTTP_MAX_CONNECTIONS; http: HTTP_MAX_CONNECTIONS): past it they are refused or the idlest closed."},
				func() float64 { _, n := read(); return float64(n) }),
		)
	}
	return m
}

// HeldRefusals registers the gauge of refused requests' answers held now and the counter of those held so far.
func (m *Metrics) HeldRefusals(held func() int, delayed func() uint64) {
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "paygraph_refusals_held",
			Help: "Answers to refused callers the REST API has not accepted (anonymous, unaccepted credential pairs) held now before they are sent (an eighth of HTTP_MAX_CONNECTIONS caps it)."},
			func() float64 { return float64(held()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "paygraph_refusals_delayed_total",
			Help: "Answers to refused callers the REST API has not accepted that were held before they were sent (REFUSAL_DELAY_MAX)."},
			func() float64 { return float64(delayed()) }),
	)
}

// Handler serves the metrics in the Prometheus text format (/metrics).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg, ErrorHandling: promhttp.ContinueOnError})
}

// InFlight counts the requests being served by next.
func (m *Metrics) InFlight(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.inFlight.Inc()
		defer m.inFlight.Dec()
		next.ServeHTTP(w, r)
	})
}

// ObserveBatch records the size of one batch of loader (a name not in Options.LoaderNames is "other").
func (m *Metrics) ObserveBatch(loader string, size int) {
	s, ok := m.loaders[loader]
	if !ok {
		s = m.loaders["other"]
	}
	s().Observe(float64(size))
}

// ObserveRESTCalls records one query operation's REST calls: estimated before any was made, and made.
func (m *Metrics) ObserveRESTCalls(estimated, made int) {
	m.opEstimated.Observe(float64(estimated))
	m.opMade.Observe(float64(made))
	m.opUnmade.Observe(float64(max(0, estimated-made)))
}

// RESTTransport counts and times the REST calls through next (nil: http.DefaultTransport) by route
// pattern and status class, and counts them and the 2xx ones in the request's RequestStats.
func (m *Metrics) RESTTransport(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return &restTransport{m: m, next: next}
}

type restTransport struct {
	m    *Metrics
	next http.RoundTripper
}

func (t *restTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	ep := t.m.opts.routeOf(r.URL)
	stats := StatsFrom(r.Context())
	stats.AddRESTCall()
	start := time.Now()
	resp, err := t.next.RoundTrip(r)
	if err == nil && resp.StatusCode/100 == 2 {
		stats.AddRESTSuccess()
	}
	s := t.m.restSeriesOf(ep)
	s.duration().Observe(time.Since(start).Seconds())
	t.m.restCallsOf(ep, s, statusClass(r.Context(), resp, err)).Inc()
	return resp, err
}

// restSeriesOf is the series of the (bounded) endpoint label ep, made when first asked for.
func (m *Metrics) restSeriesOf(ep string) *restSeries {
	if s := (*m.rest.Load())[ep]; s != nil {
		return s
	}
	m.restMu.Lock()
	defer m.restMu.Unlock()
	if s := (*m.rest.Load())[ep]; s != nil {
		return s
	}
	all := maps.Clone(*m.rest.Load()) // copied on write: read without a lock
	s := &restSeries{duration: sync.OnceValue(func() prometheus.Observer { return m.restDuration.WithLabelValues(ep) })}
	all[ep] = s
	m.rest.Store(&all)
	return s
}

// restCallsOf is the calls counter of ep (its series s) and class.
func (m *Metrics) restCallsOf(ep string, s *restSeries, class int) prometheus.Counter {
	if c := s.calls[class].Load(); c != nil {
		return *c
	}
	c := m.restCalls.WithLabelValues(ep, statusClassNames[class])
	s.calls[class].Store(&c) // a race stores the same series twice
	return c
}

// statusClassNames are the status_class values, by statusClass' number.
var statusClassNames = [...]string{"1xx", "2xx", "3xx", "4xx", "5xx", "error", "canceled", "timeout"}

const (
	classError    = 5
	classCanceled = 6
	classTimeout  = 7
)

// statusClass numbers a call's status class in statusClassNames.
func statusClass(ctx context.Context, resp *http.Response, err error) int {
	if err == nil && resp != nil {
		if c := resp.StatusCode / 100; c >= 1 && c <= 5 {
			return c - 1
		}
		return classError
	}
	var ne net.Error // declared here: it escapes, so only a failed call pays for it
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(ctx.Err(), context.Canceled):
		return classCanceled
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return classTimeout
	}
	return classError
}

// GraphQLExtension is the gqlgen extension that counts and times GraphQL requests by operation name
// and outcome (parse and validation failures included), recording both in the request's RequestStats.
func (m *Metrics) GraphQLExtension() graphql.HandlerExtension { return gqlMetrics{m} }

type gqlMetrics struct{ m *Metrics }

var _ graphql.ResponseInterceptor = gqlMetrics{}

func (gqlMetrics) ExtensionName() string                   { return "PaygraphMetrics" }
func (gqlMetrics) Validate(graphql.ExecutableSchema) error { return nil }
func (e gqlMetrics) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	var oc *graphql.OperationContext
	var start time.Time // the request's start, as the gqlgen handler took it
	if graphql.HasOperationContext(ctx) {
		oc = graphql.GetOperationContext(ctx)
		start = oc.Stats.OperationStart
	}
	if start.IsZero() {
		start = time.Now()
	}
	resp := next(ctx)
	if resp == nil {
		return nil
	}
	if oc != nil {
		// A @defer stream is one request, counted at its first payload.
		st := &oc.Stats
		if st.GetExtension(countedStat) != nil {
			return resp
		}
		st.SetExtension(countedStat, true)
	}
	raw, _ := operationOf(ctx)
	outcome := Outcome(resp)
	logName := e.m.opts.LogName(raw)
	requests, duration := e.m.opSeriesOf(ctx, logName, outcome)
	requests.Inc()
	duration.Observe(time.Since(start).Seconds())
	StatsFrom(ctx).SetOperation(logName, outcome)
	return resp
}

// countedStat marks an operation counted already (its results come one after another: no lock needed).
const countedStat = "PaygraphMetricsCounted"

// CountRefused counts, also for the access log, a request refused before
// GraphQL: "unparsed", its code.
func (m *Metrics) CountRefused(ctx context.Context, code string) {
	outcome := code
	if !plainCode(code) {
		outcome = OutcomeError
	}
	m.namesMu.Lock()
	c := m.requestsOf(OperationUnparsed, outcome)
	m.namesMu.Unlock()
	c.Inc()
	StatsFrom(ctx).SetOperation(OperationUnparsed, outcome)
}

// operationOf is the parsed operation's name and type ("query"...), else the name the client asked for.
func operationOf(ctx context.Context) (name, typ string) {
	if !graphql.HasOperationContext(ctx) {
		return "", ""
	}
	oc := graphql.GetOperationContext(ctx)
	if oc.Operation != nil {
		return oc.Operation.Name, string(oc.Operation.Operation)
	}
	return oc.OperationName, ""
}

// Outcome is "ok" without errors, else the first error's extensions.code if
// [A-Z0-9_]{1,64}, else "error".
func Outcome(resp *graphql.Response) string {
	if resp == nil || len(resp.Errors) == 0 {
		return OutcomeOK
	}
	if e := resp.Errors[0]; e != nil {
		if code, _ := e.Extensions["code"].(string); plainCode(code) {
			return code
		}
	}
	return OutcomeError
}

// plainCode reports whether s matches ^[A-Z0-9_]{1,64}$.
func plainCode(s string) bool {
	return bytesOK(s, 64, func(_ int, c byte) bool { return 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' })
}

// plainName reports whether s matches ^[A-Za-z_][A-Za-z0-9_]{0,63}$.
func plainName(s string) bool {
	return bytesOK(s, 64, func(i int, c byte) bool {
		return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || i > 0 && '0' <= c && c <= '9'
	})
}

// bytesOK reports whether s is 1 to n bytes and ok accepts each byte.
func bytesOK(s string, n int, ok func(i int, c byte) bool) bool {
	if len(s) == 0 || len(s) > n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !ok(i, s[i]) {
			return false
		}
	}
	return true
}

// opSeriesOf is the requests counter and duration histogram of the operation whose LogName is name.
func (m *Metrics) opSeriesOf(ctx context.Context, name, outcome string) (prometheus.Counter, prometheus.Observer) {
	m.namesMu.Lock()
	defer m.namesMu.Unlock()
	label := m.operationLabel(ctx, name)
	d := m.durations[label]
	if d == nil {
		d = m.gqlDuration.WithLabelValues(label)
		m.durations[label] = d
	}
	return m.requestsOf(label, outcome), d
}

// requestsOf is the requests counter of label and outcome (a plain code or
// "error"), under namesMu.
func (m *Metrics) requestsOf(label, outcome string) prometheus.Counter {
	k := [2]string{label, outcome}
	c := m.requests[k]
	if c == nil {
		c = m.gqlRequests.WithLabelValues(label, outcome)
		m.requests[k] = c
	}
	return c
}

// operationLabel is the label of LogName name: "other" unless in the set or
// may join it now; under namesMu.
func (m *Metrics) operationLabel(ctx context.Context, name string) string {
	if name == OperationAnonymous || name == OperationOther {
		return name
	}
	if _, ok := m.names[name]; ok {
		return name
	}
	if len(m.names) >= MaxOperationNames || StatsFrom(ctx).RESTSuccesses() == 0 ||
		holdsSecret(name, m.opts.secrets(ctx)) {
		return OperationOther
	}
	m.names[name] = struct{}{}
	return name
}
