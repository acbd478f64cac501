package gqlhttp

import (
	"encoding/json"
	"io"
	"sync"
	"unicode/utf8"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"paygraph/graph"
)

// writeResponse writes resp as json.Marshal would, in one Write, or, when
// that would be more than maxBytes (> 0), the RESPONSE_TOO_LARGE error
// instead.
func writeResponse(w io.Writer, resp *graphql.Response, maxBytes int64) {
	if maxBytes > 0 && resp != nil && int64(len(resp.Data)) > maxBytes {
		writeTooLarge(w, maxBytes) // without copying the data first
		return
	}
	// (gqlgen hands an empty, non-nil Extensions map; omitempty drops it.)
	if resp != nil && len(resp.Errors) == 0 && len(resp.Extensions) == 0 && resp.Label == "" &&
		len(resp.Path) == 0 && resp.HasNext == nil && len(resp.Data) > 0 && plainJSON(resp.Data) {
		// The common case: gqlgen's data is already encoded, compact JSON.
		// json.Marshal would re-validate and copy it, and write exactly
		// these bytes (plainJSON: it has nothing Marshal would escape).
		// One Write (a pooled buffer): the ResponseWriter, and the
		// middleware wrapping it, see the body as json.Marshal's.
		if maxBytes > 0 && int64(len(resp.Data)+len(`{"data":}`)) > maxBytes {
			writeTooLarge(w, maxBytes)
			return
		}
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
	if maxBytes > 0 && int64(len(b)) > maxBytes {
		writeTooLarge(w, maxBytes)
		return
	}
	_, _ = w.Write(b)
}

func writeTooLarge(w io.Writer, maxBytes int64) {
	b, _ := json.Marshal(&graphql.Response{Errors: gqlerror.List{graph.ResponseTooLarge(maxBytes)}})
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
