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

// Response Content-Type values (shared: net/http only reads them).
var (
	contentTypeJSON            = []string{"application/json; charset=utf-8"}
	contentTypeGraphQLResponse = []string{"application/graphql-response+json; charset=utf-8"}
)

const (
	mediaGraphQLResponse = "application/graphql-response+json"
	mediaJSON            = "application/json"
)

// wantsGraphQLResponse reports whether accept prefers graphql-response+json
// to application/json (or application/*, */*, or no acceptable type).
func wantsGraphQLResponse(accept string) bool {
	if !strings.Contains(accept, "graphql-response") {
		return false // the common cases, without parsing
	}
	qGR, _ := acceptQ(accept, func(media, _ string) bool { return media == mediaGraphQLResponse })
	qJSON, _ := acceptQ(accept, func(media, _ string) bool { return media == mediaJSON || media == "application/*" || media == "*/*" })
	return qGR > 0 && qGR >= qJSON
}

// wantsEventStream reports whether accept asks for graphql-sse's stream:
// text/event-stream and no JSON type (urql names both with every query).
func wantsEventStream(accept string) bool {
	if !strings.Contains(accept, "event-stream") {
		return false // the common case, without parsing
	}
	qStream, _ := acceptQ(accept, func(media, _ string) bool { return media == "text/event-stream" })
	qJSON, _ := acceptQ(accept, func(media, _ string) bool {
		return media == mediaJSON || media == mediaGraphQLResponse || media == "application/graphql+json"
	})
	return qStream > 0 && qJSON <= 0
}

// acceptQ is the highest q accept gives a media range match takes (its
// lower-cased type, its parameters), -1 when none, and whether one does.
func acceptQ(accept string, match func(media, params string) bool) (q float64, found bool) {
	q = -1
	for part := range strings.SplitSeq(accept, ",") {
		media, params, _ := strings.Cut(part, ";")
		if match(strings.ToLower(strings.TrimSpace(media)), params) {
			q, found = max(q, quality(params)), true
		}
	}
	return q, found
}

// quality is the q parameter among params (1 when absent).
func quality(params string) float64 {
	for p := range strings.SplitSeq(params, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
			if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
				return f
			}
		}
	}
	return 1
}

// setContentType sets the negotiated Content-Type; true: graphql-response+json.
func setContentType(w http.ResponseWriter, r *http.Request) bool {
	gr := wantsGraphQLResponse(FirstHeader(r.Header, "Accept"))
	if gr {
		w.Header()["Content-Type"] = contentTypeGraphQLResponse
	} else {
		w.Header()["Content-Type"] = contentTypeJSON
	}
	return gr
}

// exchange runs params and writes the answer as GraphQL over HTTP says (a
// multipart/mixed caller's @defer streamed); queriesOnly (GET) answers any
// other operation type 405.
func exchange(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor, params *graphql.RawParams, queriesOnly bool, maxResponse int64) {
	ctx := r.Context()
	gr := setContentType(w, r)
	if params.Query == "" && params.Extensions["persistedQuery"] == nil && trusted.DocumentIDFrom(ctx) == "" {
		refuse(w, r, http.StatusBadRequest, errcode.BadUserInput,
			"a GraphQL request needs a query (or a persisted query hash in extensions, or a documentId)")
		return
	}
	rc, errs := exec.CreateOperationContext(ctx, params)
	setRateLimitHeaders(w.Header(), ctx) // the operation's charge is made (ratelimit.go)
	if errs != nil {
		if queriesOnly && notQuery(rc, params) {
			refuseMethod(w, r)
			return
		}
		standardVariableErrors(rc, errs)
		writeRequestError(w, gr, exec.DispatchError(graphql.WithOperationContext(ctx, rc), errs))
		return
	}
	if rc.Operation.Operation == ast.Subscription { // its first event would look like the whole answer
		errs = gqlerror.List{{Message: msgSubscriptionNeedsStream, Extensions: map[string]any{"code": errcode.BadUserInput}}}
		writeRequestError(w, gr, exec.DispatchError(graphql.WithOperationContext(ctx, rc), errs))
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

// msgSubscriptionNeedsStream answers a subscription sent as plain JSON.
const msgSubscriptionNeedsStream = "a subscription is served as a stream only: POST it with Accept: text/event-stream (graphql-sse), " +
	"or send it over a WebSocket (graphql-transport-ws); a plain JSON request would answer only its first event"

// refuseMethod answers an operation other than a query sent with GET.
func refuseMethod(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Allow", http.MethodPost)
	refuse(w, r, http.StatusMethodNotAllowed, errcode.BadUserInput, "GET runs queries only: send mutations with POST")
}

// notQuery reports whether the operation a failed request names is known
// to be other than a query: a mutation over GET is a 405 even when invalid.
func notQuery(rc *graphql.OperationContext, params *graphql.RawParams) bool {
	var doc *ast.QueryDocument
	if rc != nil {
		doc = rc.Doc
	}
	if doc == nil {
		var err error
		if doc, err = parser.ParseQuery(&ast.Source{Input: params.Query}); err != nil {
			return false
		}
	}
	op := doc.Operations.ForName(params.OperationName)
	return op != nil && op.Operation != ast.Query
}

// standardVariableErrors rewrites gqlparser's variable coercion errors (a path
// starting with "variable") as graphql-js's: BAD_USER_INPUT, the variable
// named, its definition's location, no path.
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
		e.Message, e.Path, e.Locations = `Variable "`+where.String()+`" got an invalid value: `+e.Message, nil, nil
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

// writeRequestError writes resp's errors and extensions, no "data"; 400 under graphql-response+json (gr).
func writeRequestError(w http.ResponseWriter, gr bool, resp *graphql.Response) {
	b, err := json.Marshal(struct {
		Errors     gqlerror.List  `json:"errors"`
		Extensions map[string]any `json:"extensions,omitempty"`
	}{resp.Errors, resp.Extensions})
	if err != nil {
		b = []byte(`{"errors":[{"message":"internal error","extensions":{"code":"INTERNAL_SERVER_ERROR"}}]}`)
	}
	if gr {
		w.WriteHeader(http.StatusBadRequest)
	}
	_, _ = w.Write(b)
}
