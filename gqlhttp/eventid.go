package gqlhttp

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"paygraph/graph/live"
)

// eventIDWriter prefixes an SSE next event carrying extensions.eventId
// with its id: line, which a client sends back as Last-Event-ID when it
// reconnects. gqlgen writes one event per Write.
type eventIDWriter struct{ http.ResponseWriter }

var nextEvent = []byte("event: next\ndata: ")

func (w eventIDWriter) Write(b []byte) (int, error) {
	data, ok := bytes.CutPrefix(b, nextEvent)
	if !ok {
		return w.ResponseWriter.Write(b)
	}
	var resp struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	var id string
	if json.Unmarshal(bytes.TrimSpace(data), &resp) != nil || json.Unmarshal(resp.Extensions[live.EventIDExtension], &id) != nil {
		return w.ResponseWriter.Write(b)
	}
	if _, err := strconv.ParseUint(id, 10, 64); err != nil {
		return w.ResponseWriter.Write(b) // never a line break in a field
	}
	if _, err := w.ResponseWriter.Write([]byte("id: " + id + "\n")); err != nil {
		return 0, err
	}
	return w.ResponseWriter.Write(b)
}

func (w eventIDWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w eventIDWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
