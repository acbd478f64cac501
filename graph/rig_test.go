package graph

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/transport"

	"paygraph/graph/admission"
	"paygraph/internal/gqltest"
	"paygraph/internal/testenv"
	"paygraph/restclient"
	"paygraph/sandbox"
)

// RigConfig says how NewRig builds the GraphQL server under test and what
// stands behind it. The zero value is the server as NewServer makes it,
// with gqlgen's own GET and POST transports, behind LoadersMiddleware, in
// front of a fresh sandbox served in process.
type RigConfig struct {
	// Server configures the server (a nil Logger: the rig's Logs).
	Server ServerConfig
	// NoFastPath runs gqlgen's executor for every object, for the
	// differential tests.
	NoFastPath bool

	// REST, when set, is what the loaders call, directly. Otherwise they
	// call a restclient in front of RESTHandler (nil: Sandbox, nil: a new
	// sandbox), served in process or, with OverHTTP, by an httptest
	// server; RESTConfig's Timeout and Limiter configure that client, and
	// WrapREST, when set, stands between it and the loaders.
	REST        REST
	RESTHandler http.Handler
	Sandbox     *sandbox.Server
	OverHTTP    bool
	RESTConfig  restclient.Config
	WrapREST    func(*restclient.Client) REST

	// NoLoaders leaves LoadersMiddleware out, for a test that puts its
	// own loaders in the request's context.
	NoLoaders bool
	// Transports adds the server's transports; nil: gqlgen's GET and POST
	// (the edge's are gqlhttp's).
	Transports func(*handler.Server)
	// Credentials puts the caller's pair in the request's context; nil:
	// from the x-api-key and x-api-secret headers, as the edge does.
	Credentials func(http.Handler) http.Handler
	// RequestLimit, above zero, bounds each request's REST calls in
	// flight; Deadline, above zero, is each request's deadline.
	RequestLimit int
	Deadline     time.Duration
}

// Rig is one GraphQL server, built by NewRig, served in process: every
// graph test that needs a server builds it here.
type Rig struct {
	// Handler serves /graphql.
	Handler http.Handler
	// Sandbox is the REST API behind the server, when it is the sandbox;
	// Biz is its first business.
	Sandbox *sandbox.Server
	Biz     sandbox.Business
	// REST is what the loaders call: a rig given it as RigConfig.REST
	// shares its client (its limiter, its circuit breaker).
	REST REST
	// Logs holds the server's log lines (when the rig chose its Logger).
	Logs  *testenv.LockedBuffer
	cache *admission.QueryCache
}

// NewRig builds the server cfg says.
func NewRig(tb testing.TB, cfg RigConfig) *Rig {
	tb.Helper()
	r := &Rig{Logs: &testenv.LockedBuffer{}}
	rest := cfg.REST
	if rest == nil {
		api := cfg.RESTHandler
		if api == nil {
			if cfg.Sandbox == nil {
				cfg.Sandbox = sandbox.New(sandbox.Options{})
			}
			api = cfg.Sandbox
		}
		rcfg := cfg.RESTConfig
		if cfg.OverHTTP {
			ts := httptest.NewServer(api)
			tb.Cleanup(ts.Close)
			rcfg.BaseURL = ts.URL
		} else {
			rcfg.BaseURL, rcfg.HTTPClient = "http://rest.invalid", &http.Client{Transport: inProcess{api}}
		}
		rc, err := restclient.New(rcfg)
		if err != nil {
			tb.Fatal(err)
		}
		rest = rc
		if cfg.WrapREST != nil {
			rest = cfg.WrapREST(rc)
		}
	}
	r.REST = rest
	if cfg.Sandbox != nil {
		r.Sandbox, r.Biz = cfg.Sandbox, cfg.Sandbox.Businesses()[0]
	}
	sc := cfg.Server
	sc.noFastPath = cfg.NoFastPath
	if sc.Logger == nil {
		sc.Logger = slog.New(slog.NewTextHandler(r.Logs, nil))
	}
	srv, cache := newServer(sc)
	r.cache = cache
	if cfg.Transports != nil {
		cfg.Transports(srv)
	} else {
		srv.AddTransport(transport.GET{})
		srv.AddTransport(transport.POST{})
	}
	creds := cfg.Credentials
	if creds == nil {
		creds = withCallerPair
	}
	var h http.Handler = srv
	if !cfg.NoLoaders {
		h = LoadersMiddleware(rest, nil)(h)
	}
	h = creds(h)
	if cfg.RequestLimit > 0 || cfg.Deadline > 0 {
		inner := h
		h = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			ctx := req.Context()
			if cfg.RequestLimit > 0 {
				ctx = restclient.WithRequestLimit(ctx, cfg.RequestLimit)
			}
			if cfg.Deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, cfg.Deadline)
				defer cancel()
			}
			inner.ServeHTTP(w, req.WithContext(ctx))
		})
	}
	r.Handler = h
	return r
}

// Client is a gqltest client of the rig's server, in process.
func (r *Rig) Client() *gqltest.Client {
	return &gqltest.Client{URL: "http://gateway.invalid", HTTP: &http.Client{Transport: inProcess{r.Handler}}}
}

// inProcess serves HTTP requests from a handler without a network, so
// that a request (a fuzz execution) costs microseconds.
type inProcess struct{ h http.Handler }

func (t inProcess) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}

// withCallerPair puts the request's credential pair in its context, as the
// edge does (gqlhttp.Credentials), for the REST client to send.
func withCallerPair(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := restclient.Credentials{APIKey: r.Header.Get(restclient.HeaderAPIKey), APISecret: r.Header.Get(restclient.HeaderAPISecret)}
		next.ServeHTTP(w, r.WithContext(restclient.WithCredentials(r.Context(), c)))
	})
}

// answer is a /graphql response as the client sees it.
type answer struct {
	status int
	body   []byte
	Data   json.RawMessage `json:"data"`
	Errors []struct {
		Message    string `json:"message"`
		Extensions struct {
			Code string `json:"code"`
		} `json:"extensions"`
	} `json:"errors"`
}

// serve sends req as the rig's first business.
func (r *Rig) serve(tb testing.TB, req *http.Request) answer {
	tb.Helper()
	req.Header.Set(restclient.HeaderAPIKey, r.Biz.APIKey)
	req.Header.Set(restclient.HeaderAPISecret, r.Biz.APISecret)
	rec := httptest.NewRecorder()
	r.Handler.ServeHTTP(rec, req)
	a := answer{status: rec.Code, body: rec.Body.Bytes()}
	if err := json.Unmarshal(a.body, &a); err != nil {
		tb.Fatalf("status %d, answer is not JSON: %.300s", a.status, a.body)
	}
	return a
}

func (r *Rig) post(tb testing.TB, query string, vars map[string]any) answer {
	tb.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req := httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	return r.serve(tb, req)
}

func (r *Rig) get(tb testing.TB, query string) answer {
	tb.Helper()
	return r.serve(tb, httptest.NewRequest(http.MethodGet, "/graphql?query="+url.QueryEscape(query), nil))
}

// codes lists the answer's error codes, in order.
func (a answer) codes() []string {
	var out []string
	for _, e := range a.Errors {
		out = append(out, e.Extensions.Code)
	}
	return out
}

// wantRefused fails unless every error of a has code and a carries no data.
func (a answer) wantRefused(tb testing.TB, code string) {
	tb.Helper()
	if len(a.Errors) == 0 {
		tb.Fatalf("accepted: %.300s", a.body)
	}
	for _, c := range a.codes() {
		if c != code {
			tb.Fatalf("codes %v, want %s: %.300s", a.codes(), code, a.body)
		}
	}
	if len(a.Data) > 0 && string(a.Data) != "null" {
		tb.Errorf("refusal carries data: %.200s", a.Data)
	}
}

func (a answer) wantNoErrors(tb testing.TB) {
	tb.Helper()
	if len(a.Errors) > 0 {
		tb.Fatalf("status %d, errors: %.500s", a.status, a.body)
	}
}

const introspectionQuery = gqltest.IntrospectionQuery
