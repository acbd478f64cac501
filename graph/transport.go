package graph

import (
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"sync"
	"unicode/utf8"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// jsonPOST is the POST transport. gqlgen's own writes some failures
// itself, without an extensions.code and echoing the whole body back; this
// one decodes the body once and answers every failure with a code and a
// fixed message.
type jsonPOST struct{ refuse refuser }

var _ graphql.Transport = jsonPOST{}

func (jsonPOST) Supports(r *http.Request) bool {
	return r.Method == http.MethodPost && r.Header.Get("Upgrade") == "" && isJSON(r.Header.Get("Content-Type"))
}

func isJSON(contentType string) bool {
	switch contentType { // the usual spellings, without parsing (which allocates)
	case "application/json", "application/json; charset=utf-8", "application/json;charset=utf-8", "application/json; charset=UTF-8":
		return true
	}
	mediaType, _, err := mime.ParseMediaType(contentType)
	return err == nil && mediaType == "application/json"
}

func (t jsonPOST) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	ctx := r.Context()
	start := graphql.Now()
	// One streaming pass over the body (under limitRequest's
	// MaxBytesReader): no copy of the whole body is made first. The
	// reader records a read failure, so that it is told from bad JSON.
	body := readErrRecorder{r: r.Body}
	var req struct {
		graphql.RawParams
		DocumentID string `json:"documentId"` // persisted documents (trusteddocs.go)
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
			t.refuse.answer(w, r, status, CodeBadUserInput, msg)
			return
		}
		t.refuse.answer(w, r, http.StatusBadRequest, CodeBadUserInput,
			`request body must be a JSON object {"query": string, "operationName": string, "variables": object, "extensions": object}`)
		return
	}
	params.Headers = r.Header
	params.ReadTime = graphql.TraceTiming{Start: start, End: graphql.Now()}

	w.Header()["Content-Type"] = contentTypeJSON
	ctx = WithDocumentID(ctx, req.DocumentID)
	rc, opErr := exec.CreateOperationContext(ctx, params)
	if opErr != nil {
		w.WriteHeader(statusFor(opErr))
		writeResponse(w, exec.DispatchError(graphql.WithOperationContext(ctx, rc), opErr))
		return
	}
	responses, ctx := exec.DispatchOperation(ctx, rc)
	writeResponse(w, responses(ctx))
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

func writeResponse(w io.Writer, resp *graphql.Response) {
	// (gqlgen hands an empty, non-nil Extensions map; omitempty drops it.)
	if resp != nil && len(resp.Errors) == 0 && len(resp.Extensions) == 0 && resp.Label == "" &&
		len(resp.Path) == 0 && resp.HasNext == nil && len(resp.Data) > 0 && plainJSON(resp.Data) {
		// The common case: gqlgen's data is already encoded, compact JSON.
		// json.Marshal would re-validate and copy it, and write exactly
		// these bytes (plainJSON: it has nothing Marshal would escape).
		// One Write (a pooled buffer): the ResponseWriter, and the
		// middleware wrapping it, see the body as json.Marshal's.
		bp := responseBuffers.Get().(*[]byte)
		b := append(append(append((*bp)[:0], `{"data":`...), resp.Data...), '}')
		_, _ = w.Write(b)
		if cap(b) <= maxPooledResponse {
			*bp = b
			responseBuffers.Put(bp)
		}
		return
	}
	b, err := json.Marshal(resp)
	if err != nil {
		b = []byte(`{"errors":[{"message":"internal error","extensions":{"code":"INTERNAL_SERVER_ERROR"}}]}`)
	}
	_, _ = w.Write(b)
}

// responseBuffers holds the buffers successful responses are assembled in.
var responseBuffers = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledResponse is the largest response buffer kept for reuse.
const maxPooledResponse = 1 << 20

// plainJSON reports whether data holds nothing that json.Marshal would
// rewrite in a json.RawMessage: no insignificant whitespace, no '<', '>',
// '&', U+2028 or U+2029 (which it escapes), and valid UTF-8 (invalid bytes
// it replaces). gqlgen writes compact JSON, so whitespace only occurs
// inside strings; data with anything else takes json.Marshal's path.
func plainJSON(data []byte) bool {
	inString := false
	for i := 0; i < len(data); {
		c := data[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '<' || c == '>' || c == '&':
				return false
			case c == '"':
				inString = !inString
			case c == '\\':
				i++ // the escaped byte is ASCII: a quote or a letter
			case !inString && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			return false
		}
		i += size
	}
	return true
}

// guardTransport answers, with a code, the requests that no transport
// would take, and GET parameters that gqlgen's GET transport would refuse
// without one.
func guardTransport(refuse refuser, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodOptions:
		case http.MethodPost:
			if !isJSON(r.Header.Get("Content-Type")) {
				refuse.answer(w, r, http.StatusUnsupportedMediaType, CodeBadUserInput, "Content-Type must be application/json")
				return
			}
		case http.MethodGet:
			if msg := checkGETParams(r.URL.RawQuery); msg != "" {
				refuse.answer(w, r, http.StatusBadRequest, CodeBadUserInput, msg)
				return
			}
			if id := r.URL.Query().Get("documentId"); id != "" { // persisted documents (trusteddocs.go)
				r = r.WithContext(WithDocumentID(r.Context(), id))
			}
		default:
			w.Header().Set("Allow", "GET, POST, OPTIONS")
			refuse.answer(w, r, http.StatusMethodNotAllowed, CodeBadUserInput, "use POST with a JSON body, or GET for queries")
			return
		}
		if r.Header.Get("Upgrade") != "" {
			refuse.answer(w, r, http.StatusBadRequest, CodeBadUserInput, "protocol upgrades (websockets) are not supported")
			return
		}
		next.ServeHTTP(w, r)
	})
}

func checkGETParams(rawQuery string) string {
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return "the URL query string is not valid"
	}
	if q.Get("query") == "" && q.Get("extensions") == "" && q.Get("documentId") == "" {
		return "GET needs a query parameter (or a persisted query hash in extensions, or a documentId)"
	}
	for _, name := range [...]string{"variables", "extensions"} {
		if v := q.Get(name); v != "" {
			var obj map[string]any
			if json.Unmarshal([]byte(v), &obj) != nil {
				return name + " must be a JSON object"
			}
		}
	}
	return ""
}
