package gateway_test

// The request walk of one POST /graphql, from the router to the first
// resolver (issue 21): how many copies of the *http.Request it makes, how
// many context layers it adds, and how many middlewares run first. The
// figures are docs/design.md's table ("The request walk").

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/go-chi/chi/v5"

	"paygraph/gateway"
)

// The walk's figures now (docs/design.md, "The request walk"); the test
// fails when the walk makes more copies or context layers than these.
const (
	walkMaxCopies        = 2 // ours (the scope, internal/opscope, which holds chi's routing context), gqlgen; 3 with chi's own, 11 before the scope
	walkMaxContextValues = 8 // context.WithValue layers at the first resolver, all gqlgen's; 9 with chi's, 19 before
	walkMaxCancelLayers  = 2 // the scope and the request's deadline under it; 2 before (the deadline, the REST slots)
)

// walkFigures is what one POST /graphql's walk made.
type walkFigures struct {
	copies  int      // distinct *http.Request values, the router's and gqlgen's included
	layers  int      // middlewares of the route, run before the GraphQL server
	values  []string // the key types of the context values at the first resolver, innermost first
	cancels []string // the cancel and deadline layers there
}

// measureWalk serves one POST /graphql of the single-payment query through
// gw's own route, rebuilt by chi.Walk with a recorder between every two of
// its middlewares: each notes the *http.Request it is handed.
func measureWalk(t *testing.T, gw http.Handler, br benchRequest) walkFigures {
	t.Helper()
	// *gateway.Gateway serves its router (in the request's scope) behind
	// the batch dispatcher.
	routes, ok := gateway.Router(gw.(*gateway.Gateway)).(chi.Routes)
	if !ok {
		t.Fatalf("the gateway's handler is %T, not a chi router", gw)
	}
	var endpoint http.Handler
	var mws []func(http.Handler) http.Handler
	err := chi.Walk(routes, func(method, route string, h http.Handler, m ...func(http.Handler) http.Handler) error {
		if method == http.MethodPost && route == "/graphql" {
			endpoint, mws = h, m
		}
		return nil
	})
	if err != nil || endpoint == nil {
		t.Fatalf("no POST /graphql route (%v)", err)
	}
	srv, ok := endpoint.(*handler.Server)
	if !ok {
		t.Fatalf("the /graphql endpoint is %T, not gqlgen's server", endpoint)
	}

	var mu sync.Mutex
	seen := map[*http.Request]bool{}
	var first context.Context
	var trail []string
	note := func(at int, r *http.Request) {
		mu.Lock()
		if !seen[r] {
			trail = append(trail, strconv.Itoa(at))
		}
		seen[r] = true
		mu.Unlock()
	}
	srv.AroundFields(func(ctx context.Context, next graphql.Resolver) (any, error) {
		mu.Lock()
		if first == nil {
			first = ctx
		}
		mu.Unlock()
		return next(ctx)
	})
	recorder := func(at int, next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			note(at, r)
			next.ServeHTTP(w, r)
		})
	}
	var h http.Handler = recorder(len(mws), srv)
	for i := len(mws) - 1; i >= 0; i-- {
		h = mws[i](h)
		if i > 0 {
			h = recorder(i, h)
		}
	}
	router := chi.NewRouter()
	router.Use(func(next http.Handler) http.Handler { return recorder(0, next) }) // the scope's copy, before the first middleware
	router.Handle("/graphql", h)
	scoped := gateway.ScopeAround(gw.(*gateway.Gateway), router)

	req := httptest.NewRequest(http.MethodPost, "/graphql", bytes.NewReader(br.body))
	req.Header = br.header
	rec := httptest.NewRecorder()
	note(-1, req)
	scoped.ServeHTTP(rec, req)
	t.Logf("new copies seen after layer: %v", trail)
	if rec.Code != http.StatusOK || bytes.Contains(rec.Body.Bytes(), []byte(`"errors"`)) {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	if first == nil {
		t.Fatal("no resolver ran")
	}
	f := walkFigures{copies: len(seen) - 1, layers: len(mws)} // the client's own request is not a copy
	f.values, f.cancels = contextChain(first)
	// Inside gqlgen's server, which the recorders cannot see: its own copy
	// (handler.Server.ServeHTTP, graphql.StartOperationTrace), and the
	// POST transport's when it put the document id in the context.
	f.copies++
	for _, k := range f.values {
		if strings.HasSuffix(k, "documentIDKey") {
			f.copies++
		}
	}
	return f
}

// contextChain walks ctx's parents (the unexported fields of the context
// package's types, read by reflection) and names each layer: the key type
// of a value, the type of a cancel or deadline layer.
func contextChain(ctx context.Context) (values, cancels []string) {
	ctxType := reflect.TypeFor[context.Context]()
	v := reflect.ValueOf(ctx)
	for v.IsValid() {
		typ := v.Type().String()
		s := v
		if s.Kind() == reflect.Pointer {
			s = s.Elem()
		}
		if s.Kind() != reflect.Struct {
			break
		}
		switch typ {
		case "*context.valueCtx":
			values = append(values, s.FieldByName("key").Elem().Type().String())
		case "*context.cancelCtx", "*context.timerCtx", "*context.afterFuncCtx", "*context.stopCtx":
			cancels = append(cancels, typ)
		case "context.backgroundCtx", "context.todoCtx":
		default:
			cancels = append(cancels, typ) // a context type of its own: a layer too
		}
		v = parentOf(s, ctxType)
	}
	return values, cancels
}

// parentOf is the first field of s (depth first, through embedded
// structs) that holds a context.Context: its dynamic value.
func parentOf(s reflect.Value, ctxType reflect.Type) reflect.Value {
	for i := range s.NumField() {
		f := s.Field(i)
		switch {
		case f.Type() == ctxType:
			if f.IsNil() {
				return reflect.Value{}
			}
			return f.Elem()
		case f.Kind() == reflect.Struct && s.Type().Field(i).Anonymous:
			if p := parentOf(f, ctxType); p.IsValid() {
				return p
			}
		}
	}
	return reflect.Value{}
}

// TestRequestWalk counts the walk of one POST /graphql (a merchant's
// single payment, every setting at its default) and holds it to the
// figures of docs/design.md.
func TestRequestWalk(t *testing.T) {
	t.Parallel()
	f := newBenchFixture(t)
	gw := benchStubGateway(t, f.stub)
	// A directive sends the query to gqlgen's executor, whose resolvers
	// the walk ends at (the root fast path, graph/rootfast.go, answers the
	// same query without one, from the same context).
	q := strings.Replace(benchSingleQuery, "payment(id: $id)", "payment(id: $id) @include(if: true)", 1)
	w := measureWalk(t, gw, f.request(q, map[string]any{"id": f.paymentID}))
	t.Logf("request copies: %d; middlewares before the GraphQL server: %d", w.copies, w.layers)
	t.Logf("context values at the first resolver: %d %v", len(w.values), w.values)
	t.Logf("cancel/deadline layers there: %d %v", len(w.cancels), w.cancels)
	if w.copies > walkMaxCopies {
		t.Errorf("the walk makes %d copies of the request, more than %d", w.copies, walkMaxCopies)
	}
	if len(w.values) > walkMaxContextValues {
		t.Errorf("the first resolver's context holds %d values, more than %d", len(w.values), walkMaxContextValues)
	}
	if len(w.cancels) > walkMaxCancelLayers {
		t.Errorf("the first resolver's context has %d cancel layers, more than %d", len(w.cancels), walkMaxCancelLayers)
	}
}
