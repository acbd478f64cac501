package observe

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// Demo credentials shaped like the sandbox's.
const (
	testKey    = "ak_test_Q3kz9LmN0pXy7Tu2Vw4Rs8Ab"
	testSecret = "sk_test_R0d7Hj2Kp9Lm4Nq8St1Vx6Zb3Cf5Gh0Jk"
)

// scrape returns the metrics text.
func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics: status %d", rec.Code)
	}
	return rec.Body.String()
}

func assertSeries(t *testing.T, out string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !containsLine(out, l) {
			t.Errorf("metrics lack the line %q", l)
		}
	}
}

func containsLine(out, line string) bool {
	for _, l := range strings.Split(out, "\n") {
		if l == line {
			return true
		}
	}
	return false
}

func assertAbsent(t *testing.T, what, out string, needles ...string) {
	t.Helper()
	for _, n := range needles {
		if strings.Contains(out, n) {
			t.Errorf("%s contain %q:\n%s", what, n, out)
		}
	}
}

// restServer is a fake REST API: /api/v1/payments/<id> answers 200, or
// 404 for ids starting with "missing", or 500 for ids starting with
// "boom"; it records the traceparent and query string it receives.
type restServer struct {
	*httptest.Server
	mu          sync.Mutex
	traceparent []string
	queries     []string
}

func newRESTServer(t *testing.T) *restServer {
	rs := &restServer{}
	rs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rs.mu.Lock()
		rs.traceparent = append(rs.traceparent, r.Header.Get("traceparent"))
		rs.queries = append(rs.queries, r.URL.RawQuery)
		rs.mu.Unlock()
		id := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
		switch {
		case strings.HasPrefix(id, "missing"):
			http.Error(w, `{"error":"not found"}`, http.StatusNotFound)
		case strings.HasPrefix(id, "boom"):
			http.Error(w, `{"error":"boom"}`, http.StatusInternalServerError)
		default:
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]string{"id": id, "status": "captured"})
		}
	}))
	t.Cleanup(rs.Close)
	return rs
}

func (rs *restServer) received() (traceparents, queries []string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return append([]string(nil), rs.traceparent...), append([]string(nil), rs.queries...)
}

// refusedURL is the address of a port nothing listens on.
func refusedURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// get makes a REST-like call with the credentials in its headers.
func get(ctx context.Context, c *http.Client, url string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("x-api-key", testKey)
	req.Header.Set("x-api-secret", testSecret)
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	return resp.StatusCode, nil
}

// useTestTracer installs an in-memory exporter as the global tracer
// provider (and the W3C propagator) for the test.
func useTestTracer(t *testing.T) *tracetest.InMemoryExporter {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	prevTP, prevProp := otel.GetTracerProvider(), otel.GetTextMapPropagator()
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	t.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		otel.SetTracerProvider(prevTP)
		otel.SetTextMapPropagator(prevProp)
	})
	return exp
}

// fakeSchema is a gqlgen executable schema without generated code:
//
//	type Query { payment(id: ID!): Payment  hello: String }
//	type Payment { id: ID!  status: String }
//
// Query.payment calls the REST API at base through client (404 is a
// NOT_FOUND error); it runs its fields through the extensions' resolver
// middleware as generated code does (root fields with IsResolver, the
// Payment fields as plain fields).
func fakeSchema(client *http.Client, base string) graphql.ExecutableSchema {
	schema := gqlparser.MustLoadSchema(&ast.Source{Input: `
		type Query { payment(id: ID!): Payment  hello: String }
		type Payment { id: ID!  status: String }
	`})
	resolvePayment := func(ctx context.Context, f *ast.Field, args map[string]any) (any, error) {
		id, _ := args["id"].(string)
		status, err := get(ctx, client, base+"/api/v1/payments/"+id+"?expand=customer")
		switch {
		case err != nil:
			return nil, err
		case status == http.StatusNotFound:
			return nil, &gqlerror.Error{Message: "payment not found", Extensions: map[string]any{"code": "NOT_FOUND"}}
		case status != http.StatusOK:
			return nil, &gqlerror.Error{Message: "upstream error", Extensions: map[string]any{"code": "UPSTREAM_ERROR"}}
		}
		opCtx := graphql.GetOperationContext(ctx)
		out := map[string]any{}
		for _, sel := range f.SelectionSet {
			cf, ok := sel.(*ast.Field)
			if !ok {
				continue
			}
			cctx := graphql.WithFieldContext(ctx, &graphql.FieldContext{Object: "Payment", Field: graphql.CollectedField{Field: cf}})
			v, _ := opCtx.ResolverMiddleware(cctx, func(context.Context) (any, error) {
				if cf.Name == "id" {
					return id, nil
				}
				return "captured", nil
			})
			out[cf.Alias] = v
		}
		return out, nil
	}
	return &graphql.ExecutableSchemaMock{
		SchemaFunc: func() *ast.Schema { return schema },
		ComplexityFunc: func(context.Context, string, string, int, map[string]any) (int, bool) {
			return 1, true
		},
		ExecFunc: func(ctx context.Context) graphql.ResponseHandler {
			opCtx := graphql.GetOperationContext(ctx)
			if opCtx.Operation.Operation != ast.Query {
				return graphql.OneShot(graphql.ErrorResponse(ctx, "only queries"))
			}
			done := false
			return func(ctx context.Context) *graphql.Response {
				if done {
					return nil
				}
				done = true
				data := map[string]any{}
				for _, sel := range opCtx.Operation.SelectionSet {
					f, ok := sel.(*ast.Field)
					if !ok {
						continue
					}
					args := f.ArgumentMap(opCtx.Variables)
					fctx := graphql.WithFieldContext(ctx, &graphql.FieldContext{
						Object: "Query", Field: graphql.CollectedField{Field: f}, Args: args, IsResolver: true,
					})
					v, err := opCtx.ResolverMiddleware(fctx, func(ctx context.Context) (any, error) {
						if f.Name == "payment" {
							return resolvePayment(ctx, f, args)
						}
						return "hello", nil
					})
					if err != nil {
						var ge *gqlerror.Error
						if !errors.As(err, &ge) {
							ge = gqlerror.Errorf("%s", err)
						}
						graphql.AddError(fctx, ge)
					}
					data[f.Alias] = v
				}
				b, _ := json.Marshal(data)
				return &graphql.Response{Data: b}
			}
		},
	}
}

// gateway wires the package's pieces as server.go does: access log,
// in-flight gauge, tracing, the gqlgen server with both extensions, and a
// REST client through the metrics and tracing transports.
func gateway(m *Metrics, logBuf *syncBuffer, restBase string) http.Handler {
	client := &http.Client{Transport: m.RESTTransport(TraceTransport(http.DefaultTransport, wired(nil)))}
	srv := handler.New(fakeSchema(client, restBase))
	srv.AddTransport(transport.POST{})
	srv.Use(m.GraphQLExtension())
	srv.Use(TracingExtension(wired(nil)))
	logger := NewLogger(logBuf, "json", 0, wired(nil))
	return TraceHandler(AccessLog(logger, wired(nil))(m.InFlight(srv)))
}

// syncBuffer is a goroutine-safe buffer for log output.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// logLines decodes JSON log lines.
func logLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q is not JSON: %v", l, err)
		}
		lines = append(lines, m)
	}
	return lines
}
