package gqlhttp

import (
	"encoding/json"
	"net/http"
	"net/url"
	"paygraph/graph/errcode"
	"strings"

	"github.com/99designs/gqlgen/graphql"
)

// queryGET is the GET transport. It is ours so that a request answers as
// over POST, and a mutation is refused 405 with Allow: POST.
type queryGET struct {
	maxResponse int64 // negative: none (AddTransports)
}

// Supports takes every GET but a websocket's, Accept aside (urql's).
func (queryGET) Supports(r *http.Request) bool {
	return r.Method == http.MethodGet && FirstHeader(r.Header, "Upgrade") == ""
}

func (t queryGET) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	start := graphql.Now()
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		refuse(w, r, http.StatusBadRequest, errcode.BadUserInput, "the URL query string is not valid")
		return
	}
	params := &graphql.RawParams{
		Query:         q.Get("query"),
		OperationName: q.Get("operationName"),
		Headers:       r.Header,
	}
	for name, into := range map[string]*map[string]any{"variables": &params.Variables, "extensions": &params.Extensions} {
		if v := q.Get(name); v != "" {
			dec := json.NewDecoder(strings.NewReader(v))
			dec.UseNumber()
			if dec.Decode(into) != nil {
				refuse(w, r, http.StatusBadRequest, errcode.BadUserInput, name+" must be a JSON object")
				return
			}
		}
	}
	params.ReadTime = graphql.TraceTiming{Start: start, End: graphql.Now()}
	exchange(w, r, exec, params, true, t.maxResponse)
}
