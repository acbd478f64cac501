package gqlhttp

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	respbudget "paygraph/graph/budget"
	"paygraph/graph/errcode"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"paygraph/graph/receipt"
)

// Incremental delivery of @defer: later results go out as they complete,
// as flushed multipart/mixed parts with the 2022-08-24 payloads. It is
// ours, not gqlgen's, so that a deferred request is checked as any other;
// the request's deadline and MAX_RESPONSE_BYTES bound the whole stream.

// contentTypeMultipart is the Content-Type of a stream of results.
var contentTypeMultipart = []string{`multipart/mixed; boundary="-"; deferSpec=20220824`}

const (
	// partHead opens the first part: the boundary, the part's headers.
	partHead = "\r\n---\r\nContent-Type: application/json; charset=utf-8\r\n\r\n"
	// partNext opens a later part, whose boundary ended the one before.
	partNext = "\r\nContent-Type: application/json; charset=utf-8\r\n\r\n"
	// partEnd closes every part with the next boundary; streamEnd makes it
	// the closing one.
	partEnd   = "\r\n---"
	streamEnd = "--\r\n"
)

// acceptsIncremental reports whether accept takes multipart/mixed with the
// 2022-08-24 @defer payloads (no deferSpec, or that one; not q=0).
func acceptsIncremental(accept string) bool {
	if !containsFold(accept, "multipart/mixed") {
		return false // the common case, without parsing
	}
	for _, part := range strings.Split(accept, ",") {
		media, params, _ := strings.Cut(part, ";")
		if !strings.EqualFold(strings.TrimSpace(media), "multipart/mixed") {
			continue
		}
		ok := true
		for _, p := range strings.Split(params, ";") {
			k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
			v = strings.Trim(strings.TrimSpace(v), `"`)
			switch strings.ToLower(strings.TrimSpace(k)) {
			case "deferspec":
				ok = ok && v == "20220824"
			case "q":
				ok = ok && strings.TrimLeft(v, "0.") != ""
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// containsFold reports whether s holds sub, in any case.
func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

// incrementalEntry is one completed @defer fragment in a later part.
type incrementalEntry struct {
	Data       json.RawMessage `json:"data"`
	Path       ast.Path        `json:"path"`
	Label      string          `json:"label,omitempty"`
	Errors     gqlerror.List   `json:"errors,omitempty"`
	Extensions map[string]any  `json:"extensions,omitempty"`
}

// laterPart is a part after the first: the fragments completed since the
// last part, or the error of the whole response that ends the stream.
type laterPart struct {
	Incremental []incrementalEntry `json:"incremental,omitempty"`
	Errors      gqlerror.List      `json:"errors,omitempty"`
	HasNext     bool               `json:"hasNext"`
	Extensions  map[string]any     `json:"extensions,omitempty"` // the final part's cost receipt
}

// maxStrandedReaders bounds the goroutines timed-out streams may leave
// behind (readResults); past it, @defer is served as one payload.
const maxStrandedReaders = 1024

// strandedReaders counts the result readers blocked for good.
var strandedReaders atomic.Int64

// deferAvailable reports whether a request may have its @defer fragments
// streamed.
func deferAvailable() bool { return strandedReaders.Load() < maxStrandedReaders }

// writeIncremental writes the results of responses: one JSON payload when
// nothing was deferred (or the first is over maxBytes), else a stream.
func writeIncremental(ctx context.Context, w http.ResponseWriter, responses graphql.ResponseHandler, maxBytes int64) {
	first := responses(ctx)
	if first == nil || first.HasNext == nil || !*first.HasNext {
		writeAnswer(w, first, maxBytes, false)
		return
	}
	body, err := json.Marshal(first)
	if err != nil {
		body = []byte(`{"errors":[{"message":"internal error","extensions":{"code":"INTERNAL_SERVER_ERROR"}}],"hasNext":false}`)
	}
	written := int64(len(partHead) + len(body) + len(partEnd))
	if maxBytes > 0 && written > maxBytes {
		writeTooLarge(w, maxBytes) // not yet a stream: the one JSON payload
		return
	}
	w.Header()["Content-Type"] = contentTypeMultipart
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	buf := make([]byte, 0, len(partHead)+len(body)+len(partEnd)+len(streamEnd))
	buf = append(append(append(buf, partHead...), body...), partEnd...)
	if err := writePart(w, rc, buf); err != nil {
		return
	}

	results, stop := readResults(ctx, responses)
	defer stop()
	for {
		var part laterPart
		select {
		case resp, ok := <-results:
			part = collect(ctx, resp, ok, results)
		case <-ctx.Done():
			part = laterPart{Errors: gqlerror.List{deadlineError(ctx)}}
		}
		body, err := json.Marshal(&part)
		if err != nil {
			body, part = []byte(`{"errors":[{"message":"internal error","extensions":{"code":"INTERNAL_SERVER_ERROR"}}],"hasNext":false}`), laterPart{}
		}
		if n := int64(len(partNext) + len(body) + len(partEnd)); maxBytes > 0 && written+n > maxBytes {
			part = laterPart{Errors: gqlerror.List{respbudget.TooLarge(maxBytes)}}
			body, _ = json.Marshal(&part)
		} else {
			written += n
		}
		buf = append(append(append(buf[:0], partNext...), body...), partEnd...)
		if !part.HasNext {
			buf = append(buf, streamEnd...)
		}
		if err := writePart(w, rc, buf); err != nil || !part.HasNext {
			return
		}
	}
}

// collect makes the next part of the stream from resp (ok: the reader had
// one) and the results already waiting behind it.
func collect(ctx context.Context, resp *graphql.Response, ok bool, results <-chan *graphql.Response) laterPart {
	var part laterPart
	for {
		switch {
		case !ok || resp == nil:
			if ctx.Err() != nil {
				part.Errors = gqlerror.List{deadlineError(ctx)}
			}
			part.HasNext = false
			return part
		case len(resp.Path) == 0 && resp.Label == "":
			// An error of the whole response (RESPONSE_TOO_LARGE) ends it.
			part.Errors = resp.Errors
			part.HasNext = false
			return part
		}
		ext := resp.Extensions
		if cost, ok := ext[receipt.CostExtension]; ok {
			// The receipt is the whole operation's, not the fragment's.
			part.Extensions = map[string]any{receipt.CostExtension: cost}
			ext = maps.Clone(ext)
			delete(ext, receipt.CostExtension)
		}
		part.Incremental = append(part.Incremental, incrementalEntry{
			Data: resp.Data, Path: resp.Path, Label: resp.Label, Errors: resp.Errors, Extensions: ext,
		})
		part.HasNext = resp.HasNext != nil && *resp.HasNext
		if !part.HasNext {
			return part
		}
		select {
		case resp, ok = <-results:
		default:
			return part
		}
	}
}

// readResults calls responses on a goroutine of its own until it returns
// nil, so that the stream can end at its deadline while a result is
// awaited; a reader still waiting after stop is counted (deferAvailable).
func readResults(ctx context.Context, responses graphql.ResponseHandler) (results <-chan *graphql.Response, stop func()) {
	out := make(chan *graphql.Response)
	done := make(chan struct{})
	var (
		mu                sync.Mutex
		waiting, stranded bool
	)
	go func() {
		defer close(out)
		for {
			mu.Lock()
			waiting = true
			mu.Unlock()
			resp := responses(ctx)
			mu.Lock()
			waiting = false
			if stranded { // it was not stranded for good after all
				stranded = false
				strandedReaders.Add(-1)
			}
			mu.Unlock()
			if resp == nil {
				return
			}
			select {
			case out <- resp:
			case <-done:
				return
			}
		}
	}()
	return out, func() {
		close(done)
		mu.Lock()
		if waiting && !stranded {
			stranded = true
			strandedReaders.Add(1)
		}
		mu.Unlock()
	}
}

// deadlineError ends a stream whose request's context ended.
func deadlineError(ctx context.Context) *gqlerror.Error {
	msg := "the request was cancelled before its deferred results were complete"
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		msg = "the request took longer than its deadline: its deferred results are incomplete"
	}
	return &gqlerror.Error{Message: msg, Extensions: map[string]any{"code": errcode.UpstreamTimeout}}
}

// writePart writes one part and flushes it (Compress's encoder too).
func writePart(w http.ResponseWriter, rc *http.ResponseController, b []byte) error {
	if _, err := w.Write(b); err != nil {
		return err
	}
	return rc.Flush()
}

// withoutDefer makes rc run its @defer fragments in line, for a client
// that takes one JSON payload; rc's document is the parse cache's, so what
// holds a @defer is copied without it.
func withoutDefer(rc *graphql.OperationContext) {
	if rc == nil || rc.Doc == nil || rc.Operation == nil ||
		(rc.RawQuery != "" && (strings.IndexByte(rc.RawQuery, '@') < 0 || !strings.Contains(rc.RawQuery, "defer"))) {
		return // the common case, without a walk
	}
	sel, changed := stripDefer(rc.Operation.SelectionSet)
	var frags ast.FragmentDefinitionList // a copy, once one changes
	for i, f := range rc.Doc.Fragments {
		fsel, ok := stripDefer(f.SelectionSet)
		if !ok {
			continue
		}
		if frags == nil {
			frags = append(ast.FragmentDefinitionList(nil), rc.Doc.Fragments...)
		}
		c := *f
		c.SelectionSet = fsel
		frags[i] = &c
	}
	if !changed && frags == nil {
		return
	}
	doc := *rc.Doc
	if frags != nil {
		doc.Fragments = frags
	}
	op := *rc.Operation
	op.SelectionSet = sel
	doc.Operations = append(ast.OperationList(nil), rc.Doc.Operations...)
	for i, o := range doc.Operations {
		if o == rc.Operation {
			doc.Operations[i] = &op
		}
	}
	rc.Doc, rc.Operation = &doc, &op
}

// stripDefer returns set without @defer directives, copying only what
// holds one; changed says whether it did.
func stripDefer(set ast.SelectionSet) (out ast.SelectionSet, changed bool) {
	for i, sel := range set {
		next := sel
		switch s := sel.(type) {
		case *ast.Field:
			if sub, ok := stripDefer(s.SelectionSet); ok {
				c := *s
				c.SelectionSet = sub
				next = &c
			}
		case *ast.InlineFragment:
			dirs, dok := dropDefer(s.Directives)
			sub, sok := stripDefer(s.SelectionSet)
			if dok || sok {
				c := *s
				c.Directives, c.SelectionSet = dirs, sub
				next = &c
			}
		case *ast.FragmentSpread:
			if dirs, ok := dropDefer(s.Directives); ok {
				c := *s
				c.Directives = dirs
				next = &c
			}
		}
		if next != sel && !changed {
			out, changed = make(ast.SelectionSet, len(set)), true
			copy(out, set[:i])
		}
		if changed {
			out[i] = next
		}
	}
	if !changed {
		return set, false
	}
	return out, true
}

// dropDefer returns dirs without @defer; ok says whether it had one.
func dropDefer(dirs ast.DirectiveList) (ast.DirectiveList, bool) {
	if dirs.ForName("defer") == nil {
		return dirs, false
	}
	out := make(ast.DirectiveList, 0, len(dirs)-1)
	for _, d := range dirs {
		if d.Name != "defer" {
			out = append(out, d)
		}
	}
	return out, true
}
