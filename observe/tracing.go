package observe

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// TracingEnabled reports whether the environment asks for traces: an OTLP endpoint or an
// OTEL_TRACES_EXPORTER but "none", unless OTEL_SDK_DISABLED.
func TracingEnabled(getenv func(string) string) bool {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	switch exp := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))); exp {
	case "none":
		return false
	case "":
		return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
	default:
		return true
	}
}

// SetupTracing installs, when TracingEnabled, a global TracerProvider
// exporting by OTLP over HTTP (set by the OTEL_* variables; service.name
// defaults to serviceName) and the W3C TraceContext and Baggage propagators;
// else it changes nothing. shutdown, never nil, flushes and stops the
// exporter.
func SetupTracing(ctx context.Context, serviceName string) (shutdown func(context.Context) error, enabled bool, err error) {
	noop := func(context.Context) error { return nil }
	if !TracingEnabled(os.Getenv) {
		return noop, false, nil
	}
	if exp := strings.ToLower(strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER"))); exp != "" && exp != "otlp" {
		return noop, false, fmt.Errorf("OTEL_TRACES_EXPORTER=%q is not supported (use otlp or none)", exp)
	}
	if proto := cmp.Or(os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"), os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")); proto != "" && proto != "http/protobuf" {
		return noop, false, fmt.Errorf("OTLP protocol %q is not supported (use http/protobuf, port 4318)", proto)
	}
	exporter, err := otlptracehttp.New(ctx)
	if err != nil {
		return noop, false, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	res, err := resource.New(ctx, resource.WithTelemetrySDK(),
		resource.WithAttributes(attribute.String("service.name", serviceName)),
		resource.WithFromEnv()) // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES win
	if err != nil && res == nil {
		_ = exporter.Shutdown(ctx)
		return noop, false, fmt.Errorf("trace resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	return tp.Shutdown, true, nil
}

// tracer is the instrumentation scope of the spans this package makes.
func tracer() trace.Tracer { return otel.GetTracerProvider().Tracer("paygraph/observe") }

// globalPropagator defers to the global propagator at every call.
type globalPropagator struct{}

func (globalPropagator) Inject(ctx context.Context, c propagation.TextMapCarrier) {
	otel.GetTextMapPropagator().Inject(ctx, c)
}

func (globalPropagator) Extract(ctx context.Context, c propagation.TextMapCarrier) context.Context {
	return otel.GetTextMapPropagator().Extract(ctx, c)
}

func (globalPropagator) Fields() []string { return otel.GetTextMapPropagator().Fields() }

// TraceTransport makes a client span "REST GET /api/v1/payments/{id}"
// (o.RouteOf's pattern, never the id; url.full without the query) of every
// call through next (nil: DefaultTransport), with traceparent.
func TraceTransport(next http.RoundTripper, o Options) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	ot := otelhttp.NewTransport(restoreQuery{next, o},
		otelhttp.WithPropagators(globalPropagator{}),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
			return "REST " + r.Method + " " + o.routeOf(r.URL)
		}),
	)
	return stripQuery{ot}
}

type queryKey struct{}

// stripQuery hides the query string from the span's attributes; restoreQuery, under the span, puts it back.
type stripQuery struct{ next http.RoundTripper }

func (t stripQuery) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL == nil || r.URL.RawQuery == "" && !r.URL.ForceQuery {
		return t.next.RoundTrip(r)
	}
	r2 := r.Clone(context.WithValue(r.Context(), queryKey{}, r.URL.RawQuery))
	r2.URL.RawQuery, r2.URL.ForceQuery = "", false
	return t.next.RoundTrip(r2)
}

type restoreQuery struct {
	next http.RoundTripper
	o    Options
}

func (t restoreQuery) RoundTrip(r *http.Request) (*http.Response, error) {
	trace.SpanFromContext(r.Context()).SetAttributes(attribute.String("http.route", t.o.routeOf(r.URL)))
	if q, ok := r.Context().Value(queryKey{}).(string); ok {
		r = r.Clone(r.Context())
		r.URL.RawQuery = q
	}
	return t.next.RoundTrip(r)
}

// TraceHandler makes a server span "HTTP POST /graphql" ("HTTP GET" for
// others) of each request but probes.
func TraceHandler(next http.Handler) http.Handler {
	return otelhttp.NewHandler(next, "http",
		otelhttp.WithPropagators(globalPropagator{}),
		otelhttp.WithFilter(func(r *http.Request) bool {
			return r.URL.Path != "/healthz" && r.URL.Path != "/readyz" && r.URL.Path != "/metrics"
		}),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
			if r.URL.Path == "/graphql" {
				return "HTTP " + r.Method + " /graphql"
			}
			return "HTTP " + r.Method
		}),
	)
}

// TracingExtension makes a span per GraphQL operation ("graphql.operation
// <name>": o.LogName's, "other" when it holds a piece of o.Secrets; its type,
// never its text or variables) and under it one per root and resolver field
// ("graphql.resolve Query.payments"); errors go through o.Redact.
func TracingExtension(o Options) graphql.HandlerExtension { return gqlTracing{o} }

type gqlTracing struct{ o Options }

var (
	_ graphql.ResponseInterceptor = gqlTracing{}
	_ graphql.FieldInterceptor    = gqlTracing{}
)

func (gqlTracing) ExtensionName() string                   { return "PaygraphTracing" }
func (gqlTracing) Validate(graphql.ExecutableSchema) error { return nil }

func (e gqlTracing) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	raw, typ := operationOf(ctx)
	name := e.o.LogName(raw)
	if name != OperationAnonymous && name != OperationOther && holdsSecret(name, e.o.secrets(ctx)) {
		name = OperationOther
	}
	attrs := []attribute.KeyValue{attribute.String("graphql.operation.name", name)}
	if typ != "" {
		attrs = append(attrs, attribute.String("graphql.operation.type", typ))
	}
	ctx, span := tracer().Start(ctx, "graphql.operation "+name, trace.WithAttributes(attrs...))
	defer span.End()
	resp := next(ctx)
	if resp != nil && len(resp.Errors) > 0 {
		outcome := Outcome(resp)
		span.SetAttributes(attribute.String("graphql.outcome", outcome), attribute.Int("graphql.errors.count", len(resp.Errors)))
		span.SetStatus(codes.Error, outcome)
	}
	return resp
}

// PassesBoundFieldsThrough: InterceptField only calls next for a plain field, so the executor's
// fast path may skip it (graph's marker).
func (gqlTracing) PassesBoundFieldsThrough() {}

func (e gqlTracing) InterceptField(ctx context.Context, next graphql.Resolver) (any, error) {
	fc := graphql.GetFieldContext(ctx)
	if fc == nil || !(fc.IsResolver || fc.Parent == nil) || strings.HasPrefix(fc.Field.Name, "__") {
		return next(ctx)
	}
	ctx, span := tracer().Start(ctx, "graphql.resolve "+fc.Object+"."+fc.Field.Name, trace.WithAttributes(
		attribute.String("graphql.field.type", fc.Object), attribute.String("graphql.field.name", fc.Field.Name),
		attribute.String("graphql.field.path", fc.Path().String())))
	defer span.End()
	res, err := next(ctx)
	if err != nil {
		msg := e.o.redact(err.Error())
		span.RecordError(errors.New(msg))
		span.SetStatus(codes.Error, msg)
	}
	return res, err
}
