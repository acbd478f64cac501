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
	"paygraph/internal/opscope"
)

// AddTransports gives srv the transports the /graphql edge accepts:
// OPTIONS (gqlgen's), GET (queryGET, ours) and POST with a JSON body
// (jsonPOST, ours); both of ours answer through exchange.go, so that GET
// and POST answer a request the same way. With live, the streams of
// subscriptions too: SSE and WebSocket (gqlgen's, live.go), added first so
// that they take the GETs that ask for a stream; a POST that asks for no
// stream is tried for jsonPOST before all of them (plainPOST), which no
// request's transport changes. Methods refuses, with a
// code, whatever none of them takes. maxResponse (MAX_RESPONSE_BYTES) is
// the transports' last check of what they write, behind the response
// budget (graph.ResponseBudget), and means what graph.ServerConfig's
// MaxResponseBytes means: 0, graph.DefaultMaxResponseBytes; negative, no
// bound.
func AddTransports(srv *handler.Server, maxResponse int64, live ...Live) {
	if maxResponse == 0 {
		maxResponse = graph.DefaultMaxResponseBytes
	}
	// gqlgen asks each transport in turn: a plain JSON POST, nearly every
	// request, is asked for first (plainPOST).
	srv.AddTransport(plainPOST{jsonPOST{maxResponse: maxResponse}})
	srv.AddTransport(transport.Options{})
	// Each operation's REST-call estimate is charged by the edge, after
	// graph's query limits and before the live transports' own checks.
	srv.Use(operationCharge{})
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
	return r.Method == http.MethodPost && FirstHeader(r.Header, "Upgrade") == "" && isJSON(FirstHeader(r.Header, "Content-Type"))
}

// plainPOST is jsonPOST for the POSTs that ask for no event stream:
// exactly those that none of the transports before jsonPOST takes
// (OPTIONS, SSE, WebSocket, GET), so that, asked first, it answers them
// as jsonPOST would after those four said no (issue 25: gqlgen's
// getTransport asked five transports a POST, 1 % of a single payment's
// CPU; TestPlainPOSTFirst).
type plainPOST struct{ jsonPOST }

func (t plainPOST) Supports(r *http.Request) bool {
	return t.jsonPOST.Supports(r) && !wantsEventStream(FirstHeader(r.Header, "Accept"))
}

func (t jsonPOST) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	ctx := r.Context()
	start := graphql.Now()
	// One streaming pass over the body (under RequestSize's
	// MaxBytesReader), read as encoding/json's Decoder reads it
	// (postdecode.go): no copy of the whole body is made first. The
	// reader records a read failure, so that it is told from bad JSON.
	// The reader and the body in one allocation (both escape).
	in := &struct {
		body readErrRecorder
		req  postBody
	}{body: readErrRecorder{r: r.Body}}
	body, req := &in.body, &in.req
	params := &req.RawParams
	if err := decodePOST(body, req); err != nil {
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
		if body.batch != nil {
			refuseBatch(w, r, body.batch)
			return
		}
		refuse(w, r, http.StatusBadRequest, graph.CodeBadUserInput,
			`request body must be a JSON object {"query": string, "operationName": string, "variables": object, "extensions": object}`)
		return
	}
	params.Headers = r.Header
	params.ReadTime = graphql.TraceTiming{Start: start, End: graphql.Now()}
	exchange(w, opscope.Request(r, graph.WithDocumentID(ctx, req.DocumentID)), exec, params, false, t.maxResponse)
}

// readErrRecorder passes reads through and keeps the first error other
// than io.EOF. A body whose first byte (after blanks) is '[' (a batch) is
// also kept, for refuseBatch; an object body costs nothing more.
type readErrRecorder struct {
	r       io.Reader
	err     error
	seen    bool   // the first non-blank byte was read
	batch   []byte // the body, when it is a JSON array
	keeping bool   // batch is being kept
}

func (b *readErrRecorder) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF && b.err == nil {
		b.err = err
	}
	if b.keeping {
		b.batch = append(b.batch, p[:n]...)
	} else if !b.seen {
		for i, c := range p[:n] {
			if c == ' ' || c == '\t' || c == '\r' || c == '\n' {
				continue
			}
			b.seen = true
			if c == '[' {
				b.keeping = true
				b.batch = append(b.batch, p[i:n]...)
			}
			break
		}
	}
	return n, err
}

// maxBatchAnswers bounds the answer to a batch: past it, one error (a
// batch body is under MAX_BODY_BYTES, but 64 KiB of "{}," would be 20,000
// answers).
const maxBatchAnswers = 100

// msgBatch refuses a batch (a JSON array of operations, as Apollo's
// BatchHttpLink sends), in each operation's answer.
const msgBatch = "batched requests (a JSON array of operations) are not served by this gateway (MAX_BATCH is 0): send each operation in a request of its own " +
	"(Apollo Client: HttpLink, not BatchHttpLink); the gateway already batches the REST calls of each operation"

// refuseBatch answers a batch that reached the POST transport (batches
// are not served: MAX_BATCH is 0) with one refusal per entry.
func refuseBatch(w http.ResponseWriter, r *http.Request, batch []byte) {
	var entries []json.RawMessage
	if json.Unmarshal(batch, &entries) != nil || len(entries) == 0 || len(entries) > maxBatchAnswers {
		refuse(w, r, http.StatusBadRequest, graph.CodeBadUserInput, msgBatch)
		return
	}
	refuseEntries(w, r, len(entries), msgBatch)
}
