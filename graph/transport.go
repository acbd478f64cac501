package graph

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// jsonPOST is the POST transport. gqlgen's own writes some failures
// itself, without an extensions.code and echoing the whole body back; this
// one decodes the body once and answers every failure with a code and a
// fixed message.
type jsonPOST struct{}

var _ graphql.Transport = jsonPOST{}

func (jsonPOST) Supports(r *http.Request) bool {
	return r.Method == http.MethodPost && r.Header.Get("Upgrade") == "" && isJSON(r.Header.Get("Content-Type"))
}

func isJSON(contentType string) bool {
	mediaType, _, err := mime.ParseMediaType(contentType)
	return err == nil && mediaType == "application/json"
}

func (jsonPOST) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	ctx := r.Context()
	start := graphql.Now()
	body, err := io.ReadAll(r.Body)
	if err != nil {
		status, msg := http.StatusBadRequest, "could not read the request body"
		var tooBig *http.MaxBytesError
		var netErr net.Error
		switch {
		case errors.As(err, &tooBig):
			status, msg = http.StatusRequestEntityTooLarge, "request body is larger than the limit"
		case errors.As(err, &netErr) && netErr.Timeout():
			status, msg = http.StatusRequestTimeout, "request body was not received in time"
		}
		writeHTTPError(w, status, CodeBadUserInput, msg)
		return
	}
	var params graphql.RawParams
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&params); err != nil {
		writeHTTPError(w, http.StatusBadRequest, CodeBadUserInput,
			`request body must be a JSON object {"query": string, "operationName": string, "variables": object, "extensions": object}`)
		return
	}
	params.Headers = r.Header
	params.ReadTime = graphql.TraceTiming{Start: start, End: graphql.Now()}

	w.Header().Set("Content-Type", "application/json")
	rc, opErr := exec.CreateOperationContext(ctx, &params)
	if opErr != nil {
		w.WriteHeader(statusFor(opErr))
		writeResponse(w, exec.DispatchError(graphql.WithOperationContext(ctx, rc), opErr))
		return
	}
	responses, ctx := exec.DispatchOperation(ctx, rc)
	writeResponse(w, responses(ctx))
}

func statusFor(errs gqlerror.List) int {
	if errcode.GetErrorKind(errs) == errcode.KindProtocol {
		return http.StatusUnprocessableEntity
	}
	return http.StatusOK
}

func writeResponse(w io.Writer, resp *graphql.Response) {
	b, err := json.Marshal(resp)
	if err != nil {
		b = []byte(`{"errors":[{"message":"internal error","extensions":{"code":"INTERNAL_SERVER_ERROR"}}]}`)
	}
	_, _ = w.Write(b)
}

// guardTransport answers, with a code, the requests that no transport
// would take, and GET parameters that gqlgen's GET transport would refuse
// without one.
func guardTransport(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodOptions:
		case http.MethodPost:
			if !isJSON(r.Header.Get("Content-Type")) {
				writeHTTPError(w, http.StatusUnsupportedMediaType, CodeBadUserInput, "Content-Type must be application/json")
				return
			}
		case http.MethodGet:
			if msg := checkGETParams(r.URL.RawQuery); msg != "" {
				writeHTTPError(w, http.StatusBadRequest, CodeBadUserInput, msg)
				return
			}
		default:
			w.Header().Set("Allow", "GET, POST, OPTIONS")
			writeHTTPError(w, http.StatusMethodNotAllowed, CodeBadUserInput, "use POST with a JSON body, or GET for queries")
			return
		}
		if r.Header.Get("Upgrade") != "" {
			writeHTTPError(w, http.StatusBadRequest, CodeBadUserInput, "protocol upgrades (websockets) are not supported")
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
	if q.Get("query") == "" && q.Get("extensions") == "" {
		return "GET needs a query parameter (or a persisted query hash in extensions)"
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
