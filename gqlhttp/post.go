package gqlhttp

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"paygraph/graph"
)

// AddTransports gives srv the transports the /graphql edge accepts:
// OPTIONS and GET (gqlgen's), and POST with a JSON body (jsonPOST, ours);
// with live, the streams of subscriptions too: SSE and WebSocket
// (gqlgen's, live.go). Methods refuses, with a code, whatever none of them
// takes. maxResponse (MAX_RESPONSE_BYTES; <= 0: none) is the POST
// transport's last check of what it writes, behind the response budget
// (graph.ResponseBudget).
func AddTransports(srv *handler.Server, maxResponse int64, live ...Live) {
	srv.AddTransport(transport.Options{})
	srv.AddTransport(transport.GET{})
	for _, l := range live {
		addLive(srv.AddTransport, l)
	}
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
	maxResponse int64 // <= 0: none
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

	w.Header()["Content-Type"] = contentTypeJSON
	ctx = graph.WithDocumentID(ctx, req.DocumentID)
	rc, opErr := exec.CreateOperationContext(ctx, params)
	if opErr != nil {
		w.WriteHeader(statusFor(opErr))
		writeResponse(w, exec.DispatchError(graphql.WithOperationContext(ctx, rc), opErr), t.maxResponse)
		return
	}
	responses, ctx := exec.DispatchOperation(ctx, rc)
	writeResponse(w, responses(ctx), t.maxResponse)
}

// contentTypeJSON is the Content-Type header value of every response,
// shared (net/http only reads it).
var contentTypeJSON = []string{"application/json"}

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

func statusFor(errs gqlerror.List) int {
	if errcode.GetErrorKind(errs) == errcode.KindProtocol {
		return http.StatusUnprocessableEntity
	}
	return http.StatusOK
}
