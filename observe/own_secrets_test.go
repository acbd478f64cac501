package observe

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// The caller's own pair in these tests: plain names, shaped like no
// credential, so that only the request's own secrets can tell them.
const (
	ownKey    = "Shop_Key_Xk29Lq8Pz3"
	ownSecret = "Shop_Secret_V7m2Rt9Hw4Bn6"
)

type ownKeyT struct{}

// withOwn is a request context carrying the caller's pair, where
// ownSecrets (the stand-in for the binary's callerSecrets) finds it.
func withOwn(ctx context.Context) context.Context {
	return context.WithValue(ctx, ownKeyT{}, []string{ownKey, ownSecret})
}

func ownSecrets(ctx context.Context) []string {
	s, _ := ctx.Value(ownKeyT{}).([]string)
	return s
}

func TestOperationLabelAdmission(t *testing.T) {
	t.Parallel()
	op := func(name string) *ast.OperationDefinition {
		return &ast.OperationDefinition{Name: name, Operation: ast.Query}
	}
	// request builds a request context: its caller's pair, and how many
	// of its REST calls the REST API answered with 2xx.
	request := func(successes int) context.Context {
		ctx, stats := WithRequestStats(withOwn(context.Background()))
		for range successes {
			stats.AddRESTSuccess()
		}
		return ctx
	}
	notFound := &graphql.Response{Errors: gqlerror.List{{Message: "no", Extensions: map[string]any{"code": "NOT_FOUND"}}}}
	for _, tc := range []struct {
		name      string
		before    []string // names already in the label set (by requests answered NOT_FOUND)
		opName    string
		successes int
		want      string
	}{
		{"served: joins", nil, "PaymentScreen", 1, "PaymentScreen"},
		{"no REST call: other", nil, "PaymentScreen", 0, OperationOther},
		{"known name, no REST call: keeps its label", []string{"PaymentScreen"}, "PaymentScreen", 0, "PaymentScreen"},
		{"the caller's secret: other", nil, ownSecret, 1, OperationOther},
		{"the caller's key: other", nil, ownKey, 1, OperationOther},
		{"holding the secret: other", nil, "Get" + ownSecret, 1, OperationOther},
		{"a piece of the secret: other", nil, ownSecret[:10], 1, OperationOther},
		{"shaped like anyone's secret: other", nil, "sk_test_Zz9Yy8Xx7Ww6", 1, OperationOther},
		{"shaped like anyone's key: other", nil, "ak_prod_Zz9Yy8Xx7Ww6", 1, OperationOther},
		{"a short piece of the secret: joins", nil, "Sho", 1, "Sho"},
		{"anonymous", nil, "", 0, OperationAnonymous},
		{"the set is full: other", fullSet(), "PaymentScreen", 1, OperationOther},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMetrics(wired(ownSecrets))
			for _, n := range tc.before {
				respond(m.GraphQLExtension(), request(1), "", op(n), notFound)
			}
			ctx := request(tc.successes)
			respond(m.GraphQLExtension(), ctx, "", op(tc.opName), &graphql.Response{Data: []byte(`{}`)})
			want := `paygraph_graphql_requests_total{operation="` + tc.want + `",outcome="ok"} 1`
			out := scrape(t, m)
			if !containsLine(out, want) {
				var got []string
				for _, l := range strings.Split(out, "\n") {
					if strings.HasPrefix(l, "paygraph_graphql_requests_total{") && strings.HasSuffix(l, `outcome="ok"} 1`) {
						got = append(got, l)
					}
				}
				t.Errorf("want %s; series with outcome ok: %q", want, got)
			}
			assertAbsent(t, "metrics", out, ownSecret, ownKey, ownSecret[:10])
		})
	}
}

func fullSet() []string {
	names := make([]string, MaxOperationNames)
	for i := range names {
		names[i] = "Op" + strings.Repeat("x", i%60) + string(rune('A'+i%26)) + string(rune('a'+i/26))
	}
	return names
}

func TestRESTTransportCountsSuccesses(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/ok"):
			w.WriteHeader(http.StatusOK)
		case strings.HasSuffix(r.URL.Path, "/nf"):
			w.WriteHeader(http.StatusNotFound)
		default:
			w.WriteHeader(http.StatusUnauthorized)
		}
	}))
	defer srv.Close()
	refused := refusedURL(t)
	for _, tc := range []struct {
		name  string
		paths []string
		calls int64
		ok    int64
	}{
		{"2xx counts", []string{srv.URL + "/api/v1/payments/ok"}, 1, 1},
		{"401 does not", []string{srv.URL + "/api/v1/payments/no"}, 1, 0},
		{"404 does not", []string{srv.URL + "/api/v1/payments/nf"}, 1, 0},
		{"a connection error does not", []string{refused + "/api/v1/payments/ok"}, 1, 0},
		{"mixed", []string{srv.URL + "/api/v1/payments/no", srv.URL + "/api/v1/payments/ok", srv.URL + "/api/v1/payments/ok"}, 3, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := &http.Client{Transport: NewMetrics(wired(nil)).RESTTransport(nil)}
			ctx, stats := WithRequestStats(context.Background())
			for _, u := range tc.paths {
				_, _ = get(ctx, client, u)
			}
			if stats.RESTCalls() != tc.calls || stats.RESTSuccesses() != tc.ok {
				t.Errorf("calls %d, successes %d; want %d, %d", stats.RESTCalls(), stats.RESTSuccesses(), tc.calls, tc.ok)
			}
		})
	}
}

// TestAccessLogRequestIDHoldsNoSecret: a caller's X-Request-Id that holds
// its own key or secret (or a piece of one) is replaced by a new id,
// neither logged nor echoed; the pair, in the context before AccessLog,
// is taken out of the line by the redacting logger.
func TestAccessLogRequestIDHoldsNoSecret(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, sent string
		kept       bool
	}{
		{"an ordinary id is kept", "req-0f1e2d3c", true},
		{"the secret", ownSecret, false},
		{"the key", ownKey, false},
		{"holding the secret", "id-" + ownSecret, false},
		{"a piece of the secret", ownSecret[5:20], false},
		{"a piece shorter than 4 bytes is kept", "Sho", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			logger := NewLogger(&buf, "json", slog.LevelInfo, wired(ownSecrets))
			h := AccessLog(logger, wired(ownSecrets))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				// The operation name, as the GraphQL extension records it.
				StatsFrom(r.Context()).SetOperation(ownSecret, OutcomeOK)
			}))
			req := httptest.NewRequest(http.MethodPost, "/graphql", nil)
			req = req.WithContext(withOwn(req.Context()))
			req.Header.Set("X-Request-Id", tc.sent)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			got := rec.Header().Get("X-Request-Id")
			if tc.kept != (got == tc.sent) || !SaneRequestID(got) {
				t.Errorf("sent %q, answered %q (kept: want %v)", tc.sent, got, tc.kept)
			}
			var line map[string]any
			if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
				t.Fatalf("log %q: %v", buf.String(), err)
			}
			if line["request_id"] != got || line["operation"] != Redacted {
				t.Errorf("line %v: request_id should be %q, operation %q", line, got, Redacted)
			}
			assertAbsent(t, "the log", buf.String(), ownSecret, ownKey, ownSecret[5:20])
		})
	}
}

func TestTracingOperationNameHoldsNoSecret(t *testing.T) {
	exp := useTestTracer(t)
	ext := TracingExtension(wired(ownSecrets)).(graphql.ResponseInterceptor)
	for _, name := range []string{ownSecret, "Get" + ownKey, "PaymentScreen"} {
		ctx := graphql.WithOperationContext(withOwn(context.Background()),
			&graphql.OperationContext{Operation: &ast.OperationDefinition{Name: name, Operation: ast.Query}})
		ext.InterceptResponse(ctx, func(context.Context) *graphql.Response { return &graphql.Response{} })
	}
	var names []string
	for _, s := range exp.GetSpans() {
		names = append(names, s.Name)
		for _, a := range s.Attributes {
			if v := a.Value.String(); strings.Contains(v, ownSecret) || strings.Contains(v, ownKey) {
				t.Errorf("span %q: %s = %q", s.Name, a.Key, v)
			}
		}
	}
	want := []string{"graphql.operation other", "graphql.operation other", "graphql.operation PaymentScreen"}
	if strings.Join(names, "|") != strings.Join(want, "|") {
		t.Errorf("spans %q, want %q", names, want)
	}
}
