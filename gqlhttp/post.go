package gqlhttp

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/transport"

	respbudget "paygraph/graph/budget"
	"paygraph/graph/errcode"
	"paygraph/graph/trusted"
	"paygraph/internal/opscope"
)

// AddTransports gives srv the /graphql edge's transports: OPTIONS, GET and
// JSON POST (exchange.go) and, with live, the streams (live.go). maxResponse
// bounds what they write: 0, the default; < 0, none.
func AddTransports(srv *handler.Server, maxResponse int64, live ...Live) {
	if maxResponse == 0 {
		maxResponse = respbudget.DefaultMaxResponseBytes
	}
	srv.AddTransport(transport.Options{})
	srv.Use(operationCharge{}) // before the live transports' own checks
	for _, l := range live {
		addLive(srv, l)
	}
	srv.AddTransport(queryGET{maxResponse: maxResponse})
	srv.AddTransport(jsonPOST{maxResponse: maxResponse})
}

// jsonPOST is the POST transport. It is ours because gqlgen's answers some
// failures without a code, echoing the body (which may hold secrets).
type jsonPOST struct {
	maxResponse int64 // negative: none (AddTransports)
}

func (jsonPOST) Supports(r *http.Request) bool {
	return r.Method == http.MethodPost && FirstHeader(r.Header, "Upgrade") == "" && isJSON(FirstHeader(r.Header, "Content-Type"))
}

func (t jsonPOST) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	ctx := r.Context()
	start := graphql.Now()
	// The body is read into a pooled buffer, given back before the operation
	// runs (the values copy).
	bp := postBufs.Get().(*[]byte)
	body, err := readBody(r.Body, r.ContentLength, (*bp)[:0])
	if err != nil {
		putPostBuf(bp, body)
		if netErr, ok := errors.AsType[net.Error](err); ok && netErr.Timeout() {
			refuse(w, r, http.StatusRequestTimeout, errcode.BadUserInput, "request body was not received in time")
		} else {
			refuseBody(w, r, err)
		}
		return
	}
	req := new(postBody)
	if decodePOST(body, req) != nil {
		refuseUndecodable(w, r, body)
		putPostBuf(bp, body)
		return
	}
	putPostBuf(bp, body)
	params := &req.RawParams
	params.Headers = r.Header
	params.ReadTime = graphql.TraceTiming{Start: start, End: graphql.Now()}
	exchange(w, opscope.Request(r, trusted.WithDocumentID(ctx, req.DocumentID)), exec, params, false, t.maxResponse)
}

// postBufs are the buffers POST bodies are read into, up to maxPooledBody.
var postBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

const maxPooledBody = 64 << 10

func putPostBuf(bp *[]byte, b []byte) {
	if cap(b) <= maxPooledBody {
		*bp = b[:0]
		postBufs.Put(bp)
	}
}

// readBody appends body to b, grown at once to size (Content-Length; < 0: unknown).
func readBody(body io.Reader, size int64, b []byte) ([]byte, error) {
	if body == nil {
		return b, nil
	}
	if size >= 0 && size < maxPooledBody {
		b = slices.Grow(b, int(size)+1) // +1: the read that sees io.EOF
	}
	for {
		if len(b) == cap(b) {
			b = slices.Grow(b, 512)
		}
		n, err := body.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

const msgBatch = "batched requests (a JSON array of operations) are not served by this gateway (MAX_BATCH is 0): send each operation in a request of its own " +
	"(Apollo Client: HttpLink, not BatchHttpLink); the gateway already batches the REST calls of each operation"

// refuseUndecodable answers a body that is not one request; a batch (MAX_BATCH
// 0), one refusal an entry.
func refuseUndecodable(w http.ResponseWriter, r *http.Request, body []byte) {
	if b := bytes.TrimLeft(body, " \t\r\n"); len(b) == 0 || b[0] != '[' {
		refuse(w, r, http.StatusBadRequest, errcode.BadUserInput, msgNotObject)
		return
	}
	var entries []json.RawMessage
	if json.Unmarshal(body, &entries) != nil {
		entries = nil
	}
	refuseEntries(w, r, len(entries), msgBatch)
}

// queryGET is the GET transport: ours, to answer as POST does and a mutation 405.
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
	params := &graphql.RawParams{Query: q.Get("query"), OperationName: q.Get("operationName"), Headers: r.Header}
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
