package observe

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"paygraph/restclient"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

func attrOf(s tracetest.SpanStub, key string) (string, bool) {
	for _, a := range s.Attributes {
		if string(a.Key) == key {
			return a.Value.String(), true
		}
	}
	return "", false
}

func TestTraceTransport(t *testing.T) {
	exp := useTestTracer(t)
	rs := newRESTServer(t)
	client := &http.Client{Transport: TraceTransport(nil, wired(nil))}

	ctx, parent := otel.Tracer("test").Start(context.Background(), "parent")
	if _, err := get(ctx, client, rs.URL+"/api/v1/payments/pay_prod_abc?expand=customer&cursor=sk_test_x"); err != nil {
		t.Fatal(err)
	}
	if _, err := get(ctx, client, rs.URL+"/api/v1/payments/missing_1"); err != nil {
		t.Fatal(err)
	}
	parent.End()

	tps, queries := rs.received()
	traceID := parent.SpanContext().TraceID().String()
	for i, tp := range tps {
		// traceparent: 00-<trace id>-<span id>-<flags>
		if parts := strings.Split(tp, "-"); len(parts) != 4 || parts[1] != traceID {
			t.Errorf("call %d: traceparent %q, want trace %s", i, tp, traceID)
		}
	}
	if queries[0] != "expand=customer&cursor=sk_test_x" || queries[1] != "" {
		t.Errorf("the REST server got the queries %q", queries)
	}

	var rest []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name != "parent" {
			rest = append(rest, s)
		}
	}
	if len(rest) != 2 {
		t.Fatalf("%d REST spans: %v", len(rest), exp.GetSpans())
	}
	for i, s := range rest {
		if s.Name != "REST GET /api/v1/payments/{id}" || s.SpanKind != trace.SpanKindClient {
			t.Errorf("span %q kind %v", s.Name, s.SpanKind)
		}
		if s.Parent.SpanID() != parent.SpanContext().SpanID() {
			t.Errorf("span %q is not the parent's child", s.Name)
		}
		if !strings.HasSuffix(tps[i], s.SpanContext.SpanID().String()+"-01") {
			t.Errorf("traceparent %q does not name span %s", tps[i], s.SpanContext.SpanID())
		}
		full, _ := attrOf(s, "url.full")
		if strings.Contains(full, "?") || strings.Contains(full, "sk_test") || !strings.Contains(full, "/api/v1/payments/") {
			t.Errorf("url.full = %q", full)
		}
		if route, _ := attrOf(s, "http.route"); route != string(restclient.EndpointGetPayment) {
			t.Errorf("http.route = %q", route)
		}
		for _, a := range s.Attributes {
			if v := a.Value.String(); strings.Contains(v, testSecret) || strings.Contains(v, testKey) {
				t.Errorf("attribute %s = %q", a.Key, v)
			}
		}
	}
	if rest[1].Status.Code != codes.Error {
		t.Errorf("404 span status %v", rest[1].Status)
	}
}

func TestTracingEnabled(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want bool
	}{
		{nil, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, true},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true},
		{map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, false},
		{map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, false},
		{map[string]string{"OTEL_SERVICE_NAME": "x"}, false},
	} {
		t.Run(fmt.Sprint(tc.env), func(t *testing.T) {
			if got := TracingEnabled(func(k string) string { return tc.env[k] }); got != tc.want {
				t.Errorf("TracingEnabled(%v) = %v", tc.env, got)
			}
		})
	}
}

var otelVars = []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT",
	"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"}

func TestSetupTracing(t *testing.T) {
	prevTP, prevProp := otel.GetTracerProvider(), otel.GetTextMapPropagator()
	t.Cleanup(func() { otel.SetTracerProvider(prevTP); otel.SetTextMapPropagator(prevProp) })
	for _, tc := range []struct {
		name             string
		env              map[string]string
		enabled, wantErr bool
	}{
		{"off by default", nil, false, false},
		{"otlp http", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": refusedURL(t)}, true, false},
		{"grpc refused", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, false, true},
		{"unknown exporter", map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range otelVars {
				t.Setenv(k, tc.env[k])
			}
			shutdown, enabled, err := SetupTracing(context.Background(), "paygraph-test")
			if enabled != tc.enabled || (err != nil) != tc.wantErr {
				t.Fatalf("enabled %v, err %v", enabled, err)
			}
			if shutdown == nil {
				t.Fatal("nil shutdown")
			}
			if enabled {
				_, span := otel.Tracer("x").Start(context.Background(), "s")
				if !span.SpanContext().IsValid() {
					t.Error("global tracer provider not set")
				}
				span.End()
				if f := otel.GetTextMapPropagator().Fields(); !strings.Contains(strings.Join(f, ","), "traceparent") {
					t.Errorf("propagator fields %v", f)
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // do not wait on the unreachable collector
			_ = shutdown(ctx)
		})
	}
}
