package gqlhttp

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	respbudget "paygraph/graph/budget"
	"paygraph/graph/receipt"
)

// writeAnswer writes resp as json.Marshal would, in one Write, or
// RESPONSE_TOO_LARGE past maxBytes (> 0). compact: resp's data is compact JSON
// (graph.IsFastAnswer): only HTML-unsafe bytes change.
func writeAnswer(w io.Writer, resp *graphql.Response, maxBytes int64, compact bool) {
	if maxBytes > 0 && resp != nil && int64(len(resp.Data)) > maxBytes {
		writeTooLarge(w, maxBytes) // without copying the data first
		return
	}
	var ext []byte               // the extensions, as json.Marshal writes them
	var receipt *receipt.Receipt // or the one extension, a cost receipt that writes itself
	var receiptKey string
	if resp != nil && len(resp.Extensions) > 0 && len(resp.Errors) == 0 {
		if receiptKey, receipt = plainReceipt(resp.Extensions); receipt == nil {
			ext = marshalExtensions(resp.Extensions)
		}
	}
	if resp != nil && len(resp.Errors) == 0 && (len(resp.Extensions) == 0 || ext != nil || receipt != nil) && resp.Label == "" &&
		len(resp.Path) == 0 && resp.HasNext == nil && len(resp.Data) > 0 {
		// The common case: gqlgen's valid JSON data, in a pooled buffer.
		bp := responseBuffers.Get().(*[]byte)
		b := append((*bp)[:0], `{"data":`...)
		if compact {
			b = appendHTMLSafe(b, resp.Data)
		} else {
			b = appendMarshalled(b, resp.Data)
		}
		if ext != nil {
			b = append(append(b, `,"extensions":`...), ext...)
		}
		if receipt != nil {
			b = append(append(append(b, `,"extensions":{"`...), receiptKey...), `":`...)
			b, _ = receipt.AppendJSON(b)
			b = append(b, '}')
		}
		b = append(b, '}')
		if maxBytes > 0 && int64(len(b)) > maxBytes {
			writeTooLarge(w, maxBytes)
		} else {
			writeWhole(w, b)
		}
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
	writeWhole(w, b)
}

// lengthValues caches Content-Length values, a slot per length mod 64 (cap 1: Add copies).
var lengthValues [64]atomic.Pointer[lengthValue]

type lengthValue struct {
	n int
	v [1]string
}

// lengthHeader is the header value of a Content-Length of n bytes.
func lengthHeader(n int) []string {
	slot := &lengthValues[n%len(lengthValues)]
	if lv := slot.Load(); lv != nil && lv.n == n {
		return lv.v[:]
	}
	lv := &lengthValue{n: n}
	lv.v[0] = strconv.Itoa(n)
	slot.Store(lv)
	return lv.v[:]
}

// chunkingAfter is net/http's bufferBeforeChunkingSize: up to it, net/http sets the length.
const chunkingAfter = 2048

// writeWhole writes b, with a Content-Length past chunkingAfter (net/http
// would chunk it; gzhttp drops it).
func writeWhole(w io.Writer, b []byte) {
	if len(b) > chunkingAfter {
		if rw, ok := w.(http.ResponseWriter); ok {
			rw.Header()["Content-Length"] = lengthHeader(len(b))
		}
	}
	_, _ = w.Write(b)
}

// marshalExtensions is json.Marshal(ext), or nil when it fails.
func marshalExtensions(ext map[string]any) []byte {
	if len(ext) == 1 {
		for k, v := range ext {
			if plainKey(k) {
				b, err := json.Marshal(v)
				if err != nil {
					return nil
				}
				out := make([]byte, 0, len(k)+len(b)+5)
				out = append(append(append(append(out, `{"`...), k...), `":`...), b...)
				return append(out, '}')
			}
		}
	}
	b, err := json.Marshal(ext)
	if err != nil {
		return nil
	}
	return b
}

// plainReceipt returns ext's one entry if a cost receipt AppendJSON writes as
// json.Marshal does.
func plainReceipt(ext map[string]any) (string, *receipt.Receipt) {
	if len(ext) != 1 {
		return "", nil
	}
	for k, v := range ext {
		if r, ok := v.(*receipt.Receipt); ok && r != nil && len(r.Calls) == 0 && plainKey(k) {
			return k, r
		}
	}
	return "", nil
}

// plainKey reports whether json.Marshal writes k as it is, in quotes.
func plainKey(k string) bool {
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return k != ""
}

func writeTooLarge(w io.Writer, maxBytes int64) {
	b, _ := json.Marshal(&graphql.Response{Errors: gqlerror.List{respbudget.TooLarge(maxBytes)}})
	writeWhole(w, b)
}

// responseBuffers holds the buffers successful responses are assembled in, up
// to maxPooledResponse.
var responseBuffers = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledResponse = 1 << 20

// appendMarshalled appends what json.Marshal writes for valid JSON data as a
// json.RawMessage: compacted, '<', '>', '&', U+2028, U+2029 escaped;
// unvalidated (FuzzAppendMarshalled checks it).
func appendMarshalled(dst, data []byte) []byte {
	start := 0 // data[start:i] is still to be copied
	inString := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if !special[c] {
			continue
		}
		switch {
		case c == '"':
			inString = !inString
		case c == '\\':
			if inString {
				i++ // the escaped byte: a quote, a backslash or a letter
			}
		case c == '<' || c == '>' || c == '&':
			dst = append(dst, data[start:i]...)
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			start = i + 1
		case c == 0xE2: // U+2028, U+2029 are E2 80 A8, E2 80 A9
			if i+2 < len(data) && data[i+1] == 0x80 && data[i+2]&^1 == 0xA8 {
				dst = append(dst, data[start:i]...)
				dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[data[i+2]&0xF])
				i += 2
				start = i + 1
			}
		case !inString: // whitespace between tokens
			dst = append(dst, data[start:i]...)
			start = i + 1
		}
	}
	return append(dst, data[start:]...)
}

const hexDigits = "0123456789abcdef"

// special marks the bytes appendMarshalled looks at.
var special = [256]bool{
	'"': true, '\\': true, '<': true, '>': true, '&': true, 0xE2: true,
	' ': true, '\t': true, '\n': true, '\r': true,
}

// appendHTMLSafe is appendMarshalled for compact data, finding each
// HTML-unsafe byte by bytes.IndexByte (none follows a backslash; FuzzAppendHTMLSafe).
func appendHTMLSafe(dst, data []byte) []byte {
	const stops = "<>&\xe2"
	var next [len(stops)]int // each stop byte's next place; len(data): none
	for k := range next {
		next[k] = indexFrom(data, 0, stops[k])
	}
	start := 0 // data[start:] is still to be copied
	for {
		k := 0
		for j := 1; j < len(next); j++ {
			if next[j] < next[k] {
				k = j
			}
		}
		i := next[k]
		if i == len(data) {
			return append(dst, data[start:]...)
		}
		switch c := data[i]; {
		case c != 0xE2:
			dst = append(dst, data[start:i]...)
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			start = i + 1
		case i+2 < len(data) && data[i+1] == 0x80 && data[i+2]&^1 == 0xA8: // U+2028, U+2029
			dst = append(dst, data[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[data[i+2]&0xF])
			start = i + 3
		}
		next[k] = indexFrom(data, i+1, stops[k])
	}
}

// indexFrom is the index of the first c in data[from:], or len(data).
func indexFrom(data []byte, from int, c byte) int {
	if i := bytes.IndexByte(data[from:], c); i >= 0 {
		return from + i
	}
	return len(data)
}
