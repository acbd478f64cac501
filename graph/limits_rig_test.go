package graph

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"paygraph/graph/admission"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/graphql/handler/transport"

	"paygraph/internal/gqltest"
	"paygraph/restclient"
	"paygraph/sandbox"
)

// limitsRig is the GraphQL server in front of the sandbox, served in
// process (the sandbox counts the REST calls it gets), with the server's
// parsed-query cache in view. It takes gqlgen's own POST and GET
// transports: the edge's (gqlhttp) is tested there.
type limitsRig struct {
	h     http.Handler
	cache *admission.QueryCache
	sb    *sandbox.Server
	biz   sandbox.Business
}

type inProcess struct{ h http.Handler }

func (t inProcess) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}

func newLimitsRig(tb testing.TB, cfg ServerConfig) *limitsRig {
	tb.Helper()
	sb := sandbox.New(sandbox.Options{})
	rc, err := restclient.New(restclient.Config{BaseURL: "http://sandbox.invalid", HTTPClient: &http.Client{Transport: inProcess{sb}}})
	if err != nil {
		tb.Fatal(err)
	}
	srv, cache := newServer(cfg)
	srv.AddTransport(transport.GET{})
	srv.AddTransport(transport.POST{})
	h := withCallerPair(LoadersMiddleware(rc, nil)(srv))
	return &limitsRig{h: h, cache: cache, sb: sb, biz: sb.Businesses()[0]}
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

func (r *limitsRig) serve(tb testing.TB, req *http.Request) answer {
	tb.Helper()
	req.Header.Set("x-api-key", r.biz.APIKey)
	req.Header.Set("x-api-secret", r.biz.APISecret)
	rec := httptest.NewRecorder()
	r.h.ServeHTTP(rec, req)
	a := answer{status: rec.Code, body: rec.Body.Bytes()}
	if err := json.Unmarshal(a.body, &a); err != nil {
		tb.Fatalf("status %d, answer is not JSON: %.300s", a.status, a.body)
	}
	return a
}

func (r *limitsRig) post(tb testing.TB, query string, vars map[string]any) answer {
	tb.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req := httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	return r.serve(tb, req)
}

func (r *limitsRig) get(tb testing.TB, query string) answer {
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
