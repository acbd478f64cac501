package gqlhttp

// This file gives each SSE event of a subscription state its event id as
// the SSE id: field, so that a browser's EventSource (and graphql-sse)
// sends it back as Last-Event-ID when it reconnects. gqlgen's SSE
// transport writes one event per Write ("event: next\ndata: <json>\n\n");
// the id is the response's extensions.eventId (live.EventIDExtension).

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"paygraph/graph/live"
)

// eventIDWriter prefixes an SSE next event that carries an event id with
// its id: line.
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

// Flush and Unwrap keep the stream flushable and the writer's controller
// reachable (http.ResponseController).
func (w eventIDWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w eventIDWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
