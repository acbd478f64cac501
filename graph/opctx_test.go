package graph

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/validator"

	"paygraph/restclient"
)

// execTransport hands the test the executor gqlgen's server passes its
// transports.
type execTransport struct{ got *graphql.GraphExecutor }

func (execTransport) Supports(*http.Request) bool { return true }
func (t execTransport) Do(_ http.ResponseWriter, _ *http.Request, exec graphql.GraphExecutor) {
	*t.got = exec
}

// executorOf is srv's executor.
func executorOf(t *testing.T, srv *handler.Server) graphql.GraphExecutor {
	t.Helper()
	var exec graphql.GraphExecutor
	srv.AddTransport(execTransport{&exec})
	srv.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/", nil))
	if exec == nil {
		t.Fatal("no executor")
	}
	return exec
}

// opCtxServer is a server as NewServer makes it, with an operation
// parameter and context mutator of the edge's kind after graph's (the
// mirror must call it as gqlgen does), and its executor.
func opCtxServer(t *testing.T, seen *[]string) graphql.GraphExecutor {
	t.Helper()
	srv := NewServer(ServerConfig{MaxComplexity: 30, Limits: QueryLimits{MaxDepth: 4}})
	srv.Use(recordingMutator{seen})
	return executorOf(t, srv)
}

// recordingMutator records each call of the mutators, with what it was
// given, as the edge's charge reads it.
type recordingMutator struct{ seen *[]string }

func (recordingMutator) ExtensionName() string                   { return "Recording" }
func (recordingMutator) Validate(graphql.ExecutableSchema) error { return nil }
func (m recordingMutator) MutateOperationParameters(ctx context.Context, p *graphql.RawParams) *gqlerror.Error {
	n, ok := RootRESTCalls(graphql.GetOperationContext(ctx))
	b, _ := json.Marshal([]any{"params", p.Query, p.OperationName, p.Variables, n, ok})
	*m.seen = append(*m.seen, string(b))
	if p.OperationName == "RefusedByTheEdge" {
		return gqlerror.Errorf("refused by the edge")
	}
	return nil
}
func (m recordingMutator) MutateOperationContext(_ context.Context, oc *graphql.OperationContext) *gqlerror.Error {
	est, ok := OperationEstimate(oc)
	b, _ := json.Marshal([]any{"context", oc.Variables, oc.Operation != nil, est, ok, oc.DisableIntrospection})
	*m.seen = append(*m.seen, string(b))
	return nil
}

// TestCreateOperationContextMatchesGqlgen: the mirror (opctx.go) makes
// the operation context gqlgen's executor makes, for documents parsed
// and cached, with every kind of variable and every failure on the way:
// the same errors (codes, paths, locations), the same fields, the same
// stats (but their times), the same calls of the extensions.
func TestCreateOperationContextMatchesGqlgen(t *testing.T) {
	const payment = `query P($id: ID!) { payment(id: $id) { id status } }`
	num := func(s string) json.Number { return json.Number(s) }
	for _, tc := range []struct {
		name, query, opName string
		vars, exts          map[string]any
		wantPlain           bool // the mirror coerces the variables itself
	}{
		{name: "a literal id", query: `{ payment(id: "pay_a") { id } }`, wantPlain: true},
		{name: "an id variable", query: payment, vars: map[string]any{"id": "pay_a"}, wantPlain: true},
		{name: "an id variable and others not declared", query: payment, vars: map[string]any{"id": "pay_a", "x": 1.5, "y": nil}, wantPlain: true},
		{name: "aliases of two variables", query: `query A($a: ID!, $b: ID) { a: payment(id: $a) { id } b: payment(id: $b) { id } }`, vars: map[string]any{"a": "pay_a", "b": "pay_b"}, wantPlain: true},
		{name: "a string variable", query: `query L($c: String) { payments(after: $c) { nodes { id } } }`, vars: map[string]any{"c": "x"}, wantPlain: true},
		{name: "an id variable missing", query: payment},
		{name: "an id variable null", query: payment, vars: map[string]any{"id": nil}},
		{name: "an id variable a JSON number", query: payment, vars: map[string]any{"id": num("12")}},
		{name: "an id variable a float", query: payment, vars: map[string]any{"id": 12.5}},
		{name: "an id variable an int", query: payment, vars: map[string]any{"id": 12}},
		{name: "an id variable a list", query: payment, vars: map[string]any{"id": []any{"pay_a"}}},
		{name: "an id variable an object", query: payment, vars: map[string]any{"id": map[string]any{"a": "b"}}},
		{name: "an id variable a bool", query: payment, vars: map[string]any{"id": true}},
		{name: "a nullable id absent", query: `query P($id: ID) { payment(id: $id) { id } }`},
		{name: "a nullable id null", query: `query P($id: ID) { payment(id: $id) { id } }`, vars: map[string]any{"id": nil}},
		{name: "an id with a default", query: `query P($id: ID = "pay_d") { payment(id: $id) { id } }`},
		{name: "an id with a default, given", query: `query P($id: ID = "pay_d") { payment(id: $id) { id } }`, vars: map[string]any{"id": "pay_a"}},
		{name: "an int variable", query: `query L($n: Int) { payments(first: $n) { nodes { id } } }`, vars: map[string]any{"n": num("5")}},
		{name: "an int variable a string", query: `query L($n: Int) { payments(first: $n) { nodes { id } } }`, vars: map[string]any{"n": "5"}},
		{name: "an int variable too large", query: `query L($n: Int) { payments(first: $n) { nodes { id } } }`, vars: map[string]any{"n": num("1e400")}},
		{name: "a list of ids", query: `query N($ids: [ID!]!) { nodes(ids: $ids) { id } }`, vars: map[string]any{"ids": []any{"pay_a", "pay_b"}}},
		{name: "a list of ids, one null", query: `query N($ids: [ID!]!) { nodes(ids: $ids) { id } }`, vars: map[string]any{"ids": []any{"pay_a", nil}}},
		{name: "an undeclared type", query: `query P($id: Nope) { payment(id: "pay_a") { id } }`, vars: map[string]any{"id": "x"}},
		{name: "an unused variable", query: `query P($id: ID!) { payment(id: "pay_a") { id } }`, vars: map[string]any{"id": "x"}},
		{name: "two operations, one named", query: payment + ` query Q { payment(id: "pay_b") { id } }`, opName: "Q", wantPlain: true},
		{name: "two operations, none named", query: payment + ` query Q { payment(id: "pay_b") { id } }`},
		{name: "an operation not there", query: payment, opName: "Nope", vars: map[string]any{"id": "pay_a"}},
		{name: "a parse error", query: `{ payment(id: "pay_a") { id }`},
		{name: "no operation", query: `fragment F on Payment { id }`},
		{name: "a validation error", query: `{ payment(id: "pay_a") { nope } }`},
		{name: "too deep", query: `{ payment(id: "pay_a") { customer { a: customer { b: name } } } }`},
		{name: "deeper than the limit", query: `{ payments { edges { node { customer { name } } } pageInfo { endCursor } } a: payments { edges { node { customer { name } } } } }`},
		{name: "over the complexity", query: `query N($ids: [ID!]!) { nodes(ids: $ids) { id } }`, vars: map[string]any{"ids": []any{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15", "16", "17", "18", "19", "20", "21", "22", "23", "24", "25", "26", "27", "28", "29", "30", "31"}}},
		{name: "refused by the edge", query: payment, opName: "RefusedByTheEdge", vars: map[string]any{"id": "pay_a"}},
		{name: "an APQ hash not stored", exts: map[string]any{"persistedQuery": map[string]any{"version": num("1"), "sha256Hash": strings.Repeat("ab", 32)}}},
		{name: "an APQ hash that does not match", query: payment, vars: map[string]any{"id": "pay_a"}, exts: map[string]any{"persistedQuery": map[string]any{"version": num("1"), "sha256Hash": strings.Repeat("ab", 32)}}},
		{name: "a mutation-less schema", query: `mutation { x }`},
		{name: "introspection", query: `{ __schema { queryType { name } } }`, wantPlain: true},
		{name: "a dry run", query: payment, vars: map[string]any{"id": "pay_a"}, exts: map[string]any{DryRunExtension: true}, wantPlain: true},
		{name: "a subscription", query: `subscription S($id: ID!) { paymentUpdated(id: $id) { id } }`, vars: map[string]any{"id": "pay_a"}, wantPlain: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var seenGqlgen, seenMirror []string
			gqlgenExec, mirrorExec := opCtxServer(t, &seenGqlgen), opCtxServer(t, &seenMirror)
			// Twice each: parsed, then from the query cache.
			for i, state := range []string{"parsed", "cached"} {
				params := func() *graphql.RawParams {
					return &graphql.RawParams{Query: tc.query, OperationName: tc.opName, Variables: cloneMap(tc.vars),
						Extensions: cloneMap(tc.exts), Headers: http.Header{"X": {"y"}},
						ReadTime: graphql.TraceTiming{Start: time.Unix(1, 0), End: time.Unix(2, 0)}}
				}
				ctx := restclient.WithCredentials(graphql.StartOperationTrace(context.Background()), restclient.Credentials{APIKey: "k", APISecret: "s"})
				SetOperationMirror(false)
				want, wantErrs := CreateOperationContext(ctx, gqlgenExec, params())
				SetOperationMirror(true)
				got, gotErrs := CreateOperationContext(ctx, mirrorExec, params())
				if mirrorOf(mirrorExec) == nil {
					t.Fatal("the mirror is off: it could not read the executor")
				}
				if g, w := errorsJSON(gotErrs), errorsJSON(wantErrs); g != w {
					t.Errorf("%s: errors\n got %s\nwant %s", state, g, w)
				}
				compareOpCtx(t, state, got, want)
				if g, w := strings.Join(seenMirror, "\n"), strings.Join(seenGqlgen, "\n"); g != w {
					t.Errorf("%s: the extensions saw\n%s\nwant\n%s", state, g, w)
				}
				if i == 1 && want != nil && want.Operation != nil && wantErrs == nil {
					_, plain := plainVariables(want.Operation, tc.vars)
					if plain != tc.wantPlain {
						t.Errorf("coerced by the mirror: %v, want %v", plain, tc.wantPlain)
					}
				}
			}
		})
	}
}

func cloneMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	b, _ := json.Marshal(m)
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.UseNumber()
	var out map[string]any
	_ = d.Decode(&out)
	// What JSON cannot say (a float, an int) as it was.
	for k, v := range m {
		switch v.(type) {
		case float64, int:
			out[k] = v
		}
	}
	return out
}

func errorsJSON(errs gqlerror.List) string {
	b, _ := json.Marshal(errs)
	return string(b)
}

// compareOpCtx compares two operation contexts field by field: the
// document and operation by their source and position, the functions by
// identity (each server has its own), the stats but for their times.
func compareOpCtx(t *testing.T, state string, got, want *graphql.OperationContext) {
	t.Helper()
	if (got == nil) != (want == nil) {
		t.Fatalf("%s: operation context %v, want %v", state, got, want)
	}
	if got == nil {
		return
	}
	same := func(what string, g, w any) {
		t.Helper()
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%s: %s %#v, want %#v", state, what, g, w)
		}
	}
	same("RawQuery", got.RawQuery, want.RawQuery)
	same("OperationName", got.OperationName, want.OperationName)
	same("Variables", got.Variables, want.Variables)
	same("Extensions", got.Extensions, want.Extensions)
	same("Headers", got.Headers, want.Headers)
	same("DisableIntrospection", got.DisableIntrospection, want.DisableIntrospection)
	same("has Doc", got.Doc != nil, want.Doc != nil)
	if got.Doc != nil && want.Doc != nil {
		same("Doc's source", got.Doc.Position.Src.Input, want.Doc.Position.Src.Input)
		same("Doc's operations", len(got.Doc.Operations), len(want.Doc.Operations))
	}
	same("has Operation", got.Operation != nil, want.Operation != nil)
	if got.Operation != nil && want.Operation != nil {
		same("Operation", [2]any{got.Operation.Name, *got.Operation.Position}, [2]any{want.Operation.Name, *want.Operation.Position})
	}
	same("has RecoverFunc", got.RecoverFunc != nil, want.RecoverFunc != nil)
	same("has ResolverMiddleware", got.ResolverMiddleware != nil, want.ResolverMiddleware != nil)
	same("has RootResolverMiddleware", got.RootResolverMiddleware != nil, want.RootResolverMiddleware != nil)
	g, w := got.Stats, want.Stats
	same("Stats.Read", g.Read, w.Read)
	same("Stats.OperationStart set", g.OperationStart.IsZero(), w.OperationStart.IsZero())
	for _, ts := range [][2]*graphql.TraceTiming{{&g.Parsing, &w.Parsing}, {&g.Validation, &w.Validation}} {
		same("a timing's start set", ts[0].Start.IsZero(), ts[1].Start.IsZero())
		same("a timing's end set", ts[0].End.IsZero(), ts[1].End.IsZero())
		*ts[0], *ts[1] = graphql.TraceTiming{}, graphql.TraceTiming{}
	}
	g.OperationStart, w.OperationStart = time.Time{}, time.Time{}
	// The staged document (querycache.go) is each server's own parse.
	for _, st := range []*graphql.Stats{&g, &w} {
		if s, ok := st.GetExtension(stagedKey).(stagedDoc); ok {
			st.SetExtension(stagedKey, s.query)
		}
	}
	same("Stats", g, w)
}

// TestPlainVariablesMatchGqlparser: whenever plainVariables coerces, it
// answers what gqlparser's VariableValues answers.
func TestPlainVariablesMatchGqlparser(t *testing.T) {
	es := NewExecutableSchema(Config{Resolvers: newResolverRoot(&Resolver{})})
	exec := executorOf(t, NewServer(ServerConfig{}))
	ctx := graphql.StartOperationTrace(context.Background())
	for _, tc := range []struct {
		name, query string
		vars        map[string]any
	}{
		{"id", `query P($id: ID!) { payment(id: $id) { id } }`, map[string]any{"id": "pay_a"}},
		{"nullable string", `query P($c: String) { payments(after: $c) { nodes { id } } }`, map[string]any{"c": "x"}},
		{"an empty id", `query P($id: ID!) { payment(id: $id) { id } }`, map[string]any{"id": ""}},
		{"an id of odd bytes", `query P($id: ID!) { payment(id: $id) { id } }`, map[string]any{"id": "pay_\u2028\x00\"é"}},
		{"two, and one not declared", `query P($a: ID!, $b: String) { payment(id: $a) { id } payments(after: $b) { nodes { id } } }`, map[string]any{"a": "pay_a", "b": "c", "z": 1}},
		{"none", `{ payment(id: "pay_a") { id } }`, nil},
		{"none, some sent", `{ payment(id: "pay_a") { id } }`, map[string]any{"a": "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			oc, errs := CreateOperationContext(ctx, exec, &graphql.RawParams{Query: tc.query, Variables: tc.vars})
			if errs != nil {
				t.Fatal(errs)
			}
			got, ok := plainVariables(oc.Operation, tc.vars)
			if !ok {
				t.Fatal("not coerced by plainVariables")
			}
			want, err := validator.VariableValues(es.Schema(), oc.Operation, tc.vars)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) || got == nil {
				t.Errorf("got %#v, want %#v", got, want)
			}
		})
	}
}

// TestMirrorVersionsAgree: the mirror's versions are go.mod's, and
// graph/gen's verifiedGqlgen: a bump of either fails here until the
// mirror is checked again (graph/gen's reverify lists it).
func TestMirrorVersionsAgree(t *testing.T) {
	mod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	gen, err := os.ReadFile("gen/main.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, text, pattern, want string
	}{
		{"go.mod's gqlgen", string(mod), `(?m)^\s*github\.com/99designs/gqlgen (\S+)`, mirroredGqlgen},
		{"go.mod's gqlparser", string(mod), `(?m)^\s*github\.com/vektah/gqlparser/v2 (\S+)`, mirroredGqlparser},
		{"graph/gen's verifiedGqlgen", string(gen), `const verifiedGqlgen = "([^"]+)"`, mirroredGqlgen},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := regexp.MustCompile(tc.pattern).FindStringSubmatch(tc.text)
			if m == nil || m[1] != tc.want {
				t.Errorf("found %v, the mirror (graph/opctx.go) was verified against %s: re-verify CreateOperationContext and VariableValues, then move mirroredGqlgen/mirroredGqlparser", m, tc.want)
			}
		})
	}
}
