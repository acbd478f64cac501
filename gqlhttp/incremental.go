package gqlhttp

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	respbudget "paygraph/graph/budget"
	"paygraph/graph/errcode"
	"paygraph/graph/receipt"
)

// Incremental delivery of @defer: multipart/mixed parts (2022-08-24 payloads)
// flushed as they complete. Ours, not gqlgen's, so that its deadline and
// MAX_RESPONSE_BYTES bound the whole stream.

var contentTypeMultipart = []string{`multipart/mixed; boundary="-"; deferSpec=20220824`}

// A part opens with its boundary and headers (partHead; a later one's boundary
// ended the part before, partNext) and closes with the next boundary
// (partEnd), streamEnd the closing one.
const (
	partHead  = "\r\n---\r\nContent-Type: application/json; charset=utf-8\r\n\r\n"
	partNext  = "\r\nContent-Type: application/json; charset=utf-8\r\n\r\n"
	partEnd   = "\r\n---"
	streamEnd = "--\r\n"
)

// acceptsIncremental reports whether accept takes multipart/mixed with
// 2022-08-24 @defer payloads.
func acceptsIncremental(accept string) bool {
	if !containsFold(accept, "multipart/mixed") {
		return false // the common case, without parsing
	}
	_, ok := acceptQ(accept, func(media, params string) bool {
		if media != "multipart/mixed" {
			return false
		}
		for p := range strings.SplitSeq(params, ";") {
			k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
			v = strings.Trim(strings.TrimSpace(v), `"`)
			switch strings.ToLower(strings.TrimSpace(k)) {
			case "deferspec":
				if v != "20220824" {
					return false
				}
			case "q":
				if strings.TrimLeft(v, "0.") == "" {
					return false
				}
			}
		}
		return true
	})
	return ok
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

// laterPart is a later part: the fragments completed since, or the whole response's error.
type laterPart struct {
	Incremental []incrementalEntry `json:"incremental,omitempty"`
	Errors      gqlerror.List      `json:"errors,omitempty"`
	HasNext     bool               `json:"hasNext"`
	Extensions  map[string]any     `json:"extensions,omitempty"` // the final part's cost receipt
}

// maxStrandedReaders bounds the readers stranded by timed-out streams; past
// it, @defer is one payload.
const maxStrandedReaders = 1024

var strandedReaders atomic.Int64

func deferAvailable() bool { return strandedReaders.Load() < maxStrandedReaders }

// writeIncremental streams responses, or writes one payload if nothing was deferred or the first is over maxBytes.
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

// collect makes the next part from resp (ok: there was one) and those waiting.
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

// readResults calls responses on its own goroutine until nil, so that the
// stream can end at its deadline; one still waiting after stop is counted.
func readResults(ctx context.Context, responses graphql.ResponseHandler) (results <-chan *graphql.Response, stop func()) {
	out := make(chan *graphql.Response)
	done := make(chan struct{})
	var mu sync.Mutex
	var waiting, stranded bool
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

// withoutDefer makes rc run its @defer fragments in line (one JSON payload);
// the document is the parse cache's, so what holds a @defer is copied.
func withoutDefer(rc *graphql.OperationContext) {
	if rc == nil || rc.Doc == nil || rc.Operation == nil ||
		(rc.RawQuery != "" && (strings.IndexByte(rc.RawQuery, '@') < 0 || !strings.Contains(rc.RawQuery, "defer"))) {
		return // the common case, without a walk
	}
	sel, changed := stripDefer(rc.Operation.SelectionSet)
	frags, fragsChanged := rc.Doc.Fragments, false // copied once one changes
	for i, f := range rc.Doc.Fragments {
		if fsel, ok := stripDefer(f.SelectionSet); ok {
			if !fragsChanged {
				frags, fragsChanged = slices.Clone(frags), true
			}
			c := *f
			c.SelectionSet = fsel
			frags[i] = &c
		}
	}
	if !changed && !fragsChanged {
		return
	}
	doc, op := *rc.Doc, *rc.Operation
	doc.Fragments, op.SelectionSet = frags, sel
	doc.Operations = slices.Clone(rc.Doc.Operations)
	for i, o := range doc.Operations {
		if o == rc.Operation {
			doc.Operations[i] = &op
		}
	}
	rc.Doc, rc.Operation = &doc, &op
}

// stripDefer returns set without @defer, copying only what holds one (changed).
func stripDefer(set ast.SelectionSet) (out ast.SelectionSet, changed bool) {
	out = set
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
		if next != sel {
			if !changed {
				out, changed = slices.Clone(set), true
			}
			out[i] = next
		}
	}
	return out, changed
}

// dropDefer returns dirs without @defer; ok says whether it had one.
func dropDefer(dirs ast.DirectiveList) (ast.DirectiveList, bool) {
	if dirs.ForName("defer") == nil {
		return dirs, false
	}
	return slices.DeleteFunc(slices.Clone(dirs), func(d *ast.Directive) bool { return d.Name == "defer" }), true
}
