package gqlhttp

import (
	"encoding/json"
	"net/http"
	"paygraph/graph/errcode"
	"paygraph/graph/trusted"
	"strconv"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/parser"

	"paygraph/graph"
)

// The GraphQL-over-HTTP exchange both transports share (post.go decodes a
// JSON body, get.go a URL query string; from there on a request is
// answered the same way, whichever method carried it):
//
//   - the response media type is negotiated from Accept:
//     application/graphql-response+json when the caller prefers it,
//     application/json otherwise (also with no Accept, or */*: the
//     specification's default for legacy clients); both with charset=utf-8;
//   - a request error (execution did not start: no query, a parse,
//     validation or variable-coercion failure, a limit refused before any
//     REST call) is answered without a "data" entry, with 200 under
//     application/json and 400 under application/graphql-response+json, as
//     the specification says
//     (https://graphql.github.io/graphql-over-http/draft/#sec-Response);
//   - variable coercion errors carry BAD_USER_INPUT, no path, and the
//     variable definition's location (graphql-js's shape).
//   - a caller that accepts multipart/mixed (acceptsIncremental) gets the
//     results of its @defer fragments as they complete, in a stream of
//     parts (incremental.go), when something was deferred; any other
//     caller gets the complete result in one payload, its @defer
//     fragments run in line (withoutDefer).

// Response Content-Type values (net/http only reads them: shared).
var (
	contentTypeJSON            = []string{"application/json; charset=utf-8"}
	contentTypeGraphQLResponse = []string{"application/graphql-response+json; charset=utf-8"}
)

const (
	mediaGraphQLResponse = "application/graphql-response+json"
	mediaJSON            = "application/json"
)

// wantsGraphQLResponse reports whether accept (an Accept header) prefers
// application/graphql-response+json to application/json. application/*
// and */* count as application/json; with no acceptable type at all the
// answer is application/json still (the specification allows it, and it
// is what a client that sends Accept: text/html can still read).
func wantsGraphQLResponse(accept string) bool {
	if accept == "" || !strings.Contains(accept, "graphql-response") {
		return false // the common cases, without parsing
	}
	var qGR, qJSON float64 = -1, -1
	for _, part := range strings.Split(accept, ",") {
		media, params, _ := strings.Cut(part, ";")
		q := quality(params)
		switch strings.ToLower(strings.TrimSpace(media)) {
		case mediaGraphQLResponse:
			qGR = max(qGR, q)
		case mediaJSON, "application/*", "*/*":
			qJSON = max(qJSON, q)
		}
	}
	return qGR > 0 && qGR >= qJSON
}

// wantsEventStream reports whether accept (an Accept header) asks for
// graphql-sse's event stream: it takes text/event-stream and no JSON
// answer. graphql-sse's clients send Accept: text/event-stream (urql's
// subscriptions add multipart/mixed); urql sends text/event-stream beside
// the JSON types with every query and mutation, and reads a JSON answer
// (or, for @defer, multipart/mixed) as any other client: such a request
// is not a stream, and keeps its deadline.
func wantsEventStream(accept string) bool {
	if !strings.Contains(accept, "event-stream") {
		return false // the common case, without parsing
	}
	stream, json := false, false
	for _, part := range strings.Split(accept, ",") {
		media, params, _ := strings.Cut(part, ";")
		if quality(params) <= 0 {
			continue
		}
		switch strings.ToLower(strings.TrimSpace(media)) {
		case "text/event-stream":
			stream = true
		case mediaJSON, mediaGraphQLResponse, "application/graphql+json":
			json = true
		}
	}
	return stream && !json
}

// quality is the q parameter among params (1 when absent).
func quality(params string) float64 {
	for _, p := range strings.Split(params, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
			if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
				return f
			}
		}
	}
	return 1
}

// setContentType sets the negotiated response Content-Type and reports
// whether it is application/graphql-response+json.
func setContentType(w http.ResponseWriter, r *http.Request) bool {
	gr := wantsGraphQLResponse(FirstHeader(r.Header, "Accept"))
	if gr {
		w.Header()["Content-Type"] = contentTypeGraphQLResponse
	} else {
		w.Header()["Content-Type"] = contentTypeJSON
	}
	return gr
}

// exchange runs params, decoded by a transport, and writes the answer.
// queriesOnly (GET) answers any other operation type with 405 and Allow:
// POST (the specification's answer to a mutation over GET).
func exchange(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor, params *graphql.RawParams, queriesOnly bool, maxResponse int64) {
	ctx := r.Context()
	gr := setContentType(w, r)
	if params.Query == "" && params.Extensions["persistedQuery"] == nil && trusted.DocumentIDFrom(ctx) == "" {
		refuse(w, r, http.StatusBadRequest, errcode.BadUserInput,
			"a GraphQL request needs a query (or a persisted query hash in extensions, or a documentId)")
		return
	}
	rc, errs := exec.CreateOperationContext(ctx, params)
	setRateLimitHeaders(w.Header(), ctx) // the operation's charge is made (charge.go)
	if errs != nil {
		if queriesOnly && notQuery(rc, params) {
			refuseMethod(w, r)
			return
		}
		standardVariableErrors(rc, errs)
		status := http.StatusOK
		if gr {
			status = http.StatusBadRequest
		}
		w.WriteHeader(status)
		writeRequestError(w, exec.DispatchError(graphql.WithOperationContext(ctx, rc), errs))
		return
	}
	if rc.Operation.Operation == ast.Subscription {
		// A subscription is a stream: answered once, as gqlgen would, its
		// first event would look like the whole answer and the client
		// would never see a change. Refused as a request error.
		status := http.StatusOK
		if gr {
			status = http.StatusBadRequest
		}
		w.WriteHeader(status)
		writeRequestError(w, exec.DispatchError(graphql.WithOperationContext(ctx, rc), gqlerror.List{{
			Message:    msgSubscriptionNeedsStream,
			Extensions: map[string]any{"code": errcode.BadUserInput},
		}}))
		return
	}
	if queriesOnly && rc.Operation.Operation != ast.Query {
		refuseMethod(w, r)
		return
	}
	if acceptsIncremental(FirstHeader(r.Header, "Accept")) && deferAvailable() {
		responses, ctx := exec.DispatchOperation(ctx, rc)
		writeIncremental(ctx, w, responses, maxResponse)
		return
	}
	withoutDefer(rc)
	responses, ctx := exec.DispatchOperation(ctx, rc)
	resp := responses(ctx)
	writeAnswer(w, resp, maxResponse, resp != nil && graph.IsFastAnswer(ctx, resp.Data))
}

// msgSubscriptionNeedsStream answers a subscription sent as a plain JSON
// request (POST or GET without Accept: text/event-stream).
const msgSubscriptionNeedsStream = "a subscription is served as a stream only: POST it with Accept: text/event-stream (graphql-sse), " +
	"or send it over a WebSocket (graphql-transport-ws); a plain JSON request would answer only its first event"

// refuseMethod answers an operation other than a query sent with GET.
func refuseMethod(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Allow", http.MethodPost)
	refuse(w, r, http.StatusMethodNotAllowed, errcode.BadUserInput, "GET runs queries only: send mutations with POST")
}

// notQuery reports whether the operation a failed request names is known
// to be something other than a query: the mutation over GET is refused
// with 405 even when the schema has no mutations (validation would
// otherwise have answered first). It parses only on this error path.
func notQuery(rc *graphql.OperationContext, params *graphql.RawParams) bool {
	var doc *ast.QueryDocument
	if rc != nil && rc.Doc != nil {
		doc = rc.Doc
	} else if params.Query != "" {
		d, err := parser.ParseQuery(&ast.Source{Input: params.Query})
		if err != nil {
			return false
		}
		doc = d
	}
	if doc == nil {
		return false
	}
	op := doc.Operations.ForName(params.OperationName)
	return op != nil && op.Operation != ast.Query
}

// standardVariableErrors rewrites gqlparser's variable coercion errors
// (code GRAPHQL_VALIDATION_FAILED, a path starting with "variable", which
// no response path ever has) into the shape graphql-js gives them: the
// contract's BAD_USER_INPUT, the variable named in the message, the
// location of its definition, no path.
func standardVariableErrors(rc *graphql.OperationContext, errs gqlerror.List) {
	for _, e := range errs {
		if len(e.Path) < 2 || e.Path[0] != ast.PathName("variable") {
			continue
		}
		name, _ := e.Path[1].(ast.PathName)
		var where strings.Builder
		where.WriteString("$")
		for _, el := range e.Path[1:] {
			switch el := el.(type) {
			case ast.PathName:
				if where.Len() > 1 {
					where.WriteByte('.')
				}
				where.WriteString(string(el))
			case ast.PathIndex:
				where.WriteString("[" + strconv.Itoa(int(el)) + "]")
			}
		}
		e.Message = `Variable "` + where.String() + `" got an invalid value: ` + e.Message
		e.Path = nil
		e.Locations = nil
		if rc != nil && rc.Operation != nil {
			if def := rc.Operation.VariableDefinitions.ForName(string(name)); def != nil && def.Position != nil {
				e.Locations = []gqlerror.Location{{Line: def.Position.Line, Column: def.Position.Column}}
			}
		}
		if e.Extensions == nil {
			e.Extensions = map[string]any{}
		}
		e.Extensions["code"] = errcode.BadUserInput
	}
}

// writeRequestError writes resp as a request error: its errors and
// extensions, and no "data" entry (execution did not start).
func writeRequestError(w http.ResponseWriter, resp *graphql.Response) {
	b, err := json.Marshal(struct {
		Errors     gqlerror.List  `json:"errors"`
		Extensions map[string]any `json:"extensions,omitempty"`
	}{resp.Errors, resp.Extensions})
	if err != nil {
		b = []byte(`{"errors":[{"message":"internal error","extensions":{"code":"INTERNAL_SERVER_ERROR"}}]}`)
	}
	_, _ = w.Write(b)
}
