package gqlhttp

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/transport"

	"paygraph/graph"
)

// AddTransports gives srv the transports the /graphql edge accepts:
// OPTIONS (gqlgen's), GET (queryGET, ours) and POST with a JSON body
// (jsonPOST, ours); both of ours answer through exchange.go, so that GET
// and POST answer a request the same way. With live, the streams of
// subscriptions too: SSE and WebSocket (gqlgen's, live.go), added first so
// that they take the GETs that ask for a stream. Methods refuses, with a
// code, whatever none of them takes. maxResponse (MAX_RESPONSE_BYTES) is
// the transports' last check of what they write, behind the response
// budget (graph.ResponseBudget), and means what graph.ServerConfig's
// MaxResponseBytes means: 0, graph.DefaultMaxResponseBytes; negative, no
// bound.
func AddTransports(srv *handler.Server, maxResponse int64, live ...Live) {
	if maxResponse == 0 {
		maxResponse = graph.DefaultMaxResponseBytes
	}
	srv.AddTransport(transport.Options{})
	for _, l := range live {
		addLive(srv, l)
	}
	srv.AddTransport(queryGET{maxResponse: maxResponse})
	srv.AddTransport(jsonPOST{maxResponse: maxResponse})
}

// jsonPOST is the POST transport. It is ours rather than gqlgen's
// transport.POST because gqlgen's writes some failures itself, without an
// extensions.code and echoing the whole body back in the message (a
// caller's body may hold anything, secrets included); this one decodes the
// body once, streaming, and answers every failure with a code and a fixed
// message. It checks the size of what it writes against maxResponse: the
// last line of the response budget.
type jsonPOST struct {
	maxResponse int64 // negative: none (AddTransports)
}

var _ graphql.Transport = jsonPOST{}

func (jsonPOST) Supports(r *http.Request) bool {
	return r.Method == http.MethodPost && r.Header.Get("Upgrade") == "" && isJSON(r.Header.Get("Content-Type"))
}

func (t jsonPOST) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	ctx := r.Context()
	start := graphql.Now()
	// One streaming pass over the body (under RequestSize's
	// MaxBytesReader): no copy of the whole body is made first. The
	// reader records a read failure, so that it is told from bad JSON.
	body := readErrRecorder{r: r.Body}
	var req struct {
		graphql.RawParams
		DocumentID string `json:"documentId"` // persisted documents (graph/trusteddocs.go)
	}
	params := &req.RawParams
	dec := json.NewDecoder(&body)
	dec.UseNumber()
	if err := dec.Decode(&req); err != nil {
		if body.err != nil {
			status, msg := http.StatusBadRequest, "could not read the request body"
			var tooBig *http.MaxBytesError
			var netErr net.Error
			switch {
			case errors.As(body.err, &tooBig):
				status, msg = http.StatusRequestEntityTooLarge, "request body is larger than the limit"
			case errors.As(body.err, &netErr) && netErr.Timeout():
				status, msg = http.StatusRequestTimeout, "request body was not received in time"
			}
			refuse(w, r, status, graph.CodeBadUserInput, msg)
			return
		}
		refuse(w, r, http.StatusBadRequest, graph.CodeBadUserInput,
			`request body must be a JSON object {"query": string, "operationName": string, "variables": object, "extensions": object}`)
		return
	}
	params.Headers = r.Header
	params.ReadTime = graphql.TraceTiming{Start: start, End: graphql.Now()}
	exchange(w, r.WithContext(graph.WithDocumentID(ctx, req.DocumentID)), exec, params, false, t.maxResponse)
}

// readErrRecorder passes reads through and keeps the first error other
// than io.EOF.
type readErrRecorder struct {
	r   io.Reader
	err error
}

func (b *readErrRecorder) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF && b.err == nil {
		b.err = err
	}
	return n, err
}
