package gqlhttp

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"paygraph/graph/errcode"
)

// Batches serves POST path bodies that are JSON arrays of at most max
// operations (Apollo's batching links), each entry through next as a request
// of its own, concurrently, so that each bound costs what they would sent one
// by one; the answers are an array, in order. A larger batch is refused whole;
// max 0 serves none. wrap, if any, is put around the answer.
func Batches(path string, max int, maxBody int64, wrap func(http.Handler) http.Handler, next http.Handler) http.Handler {
	if max <= 0 {
		return next
	}
	answer := http.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answerBatch(w, r, max, maxBody, next)
	}))
	if wrap != nil {
		answer = wrap(answer)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != path || FirstHeader(r.Header, "Upgrade") != "" ||
			!isJSON(FirstHeader(r.Header, "Content-Type")) || wantsEventStream(FirstHeader(r.Header, "Accept")) {
			next.ServeHTTP(w, r)
			return
		}
		p := &prefixedBody{ReadCloser: r.Body}
		first, err := p.readFirst()
		r.Body = p // the body as it came
		if err != nil || first != '[' {
			next.ServeHTTP(w, r)
			return
		}
		answer.ServeHTTP(w, r)
	})
}

// prefixedBody gives back the bytes Batches read, up to the first non-blank, before the rest.
type prefixedBody struct {
	one    [1]byte
	prefix []byte // what was read and not yet given back
	io.ReadCloser
}

func (p *prefixedBody) readFirst() (byte, error) {
	for {
		n, err := p.ReadCloser.Read(p.one[:])
		if c := p.one[0]; n == 1 {
			blank := c == ' ' || c == '\t' || c == '\r' || c == '\n'
			if p.prefix == nil && !blank {
				p.prefix = p.one[:] // the common case: no allocation
				return c, nil
			}
			p.prefix = append(p.prefix, c) // rare: blanks before the body
			if !blank {
				return c, nil
			}
		}
		if err != nil {
			return 0, err
		}
	}
}

func (p *prefixedBody) Read(b []byte) (int, error) {
	if len(p.prefix) > 0 {
		n := copy(b, p.prefix)
		p.prefix = p.prefix[n:]
		return n, nil
	}
	return p.ReadCloser.Read(b)
}

// answerBatch serves one batch.
func answerBatch(w http.ResponseWriter, r *http.Request, max int, maxBody int64, next http.Handler) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		refuseBody(w, r, err)
		return
	}
	var entries []json.RawMessage
	if json.Unmarshal(body, &entries) != nil || len(entries) == 0 {
		refuse(w, r, http.StatusBadRequest, errcode.BadUserInput,
			`a batch must be a JSON array of request objects [{"query": string, "operationName": string, "variables": object, "extensions": object}, ...]`)
		return
	}
	if len(entries) > max {
		refuseEntries(w, r, len(entries), "a batch holds at most "+strconv.Itoa(max)+" operations; this one has "+
			strconv.Itoa(len(entries))+": send the rest in another request")
		return
	}
	answers := make([]*entryAnswer, len(entries))
	var wg sync.WaitGroup
	for i, e := range entries {
		answers[i] = &entryAnswer{header: http.Header{}}
		sub := r.Clone(r.Context())
		sub.Body, sub.ContentLength = io.NopCloser(bytes.NewReader(e)), int64(len(e))
		sub.Header.Del("Content-Length")
		// An entry's answer is one JSON object, never compressed or streamed.
		sub.Header.Del("Accept-Encoding")
		if accept := FirstHeader(sub.Header, "Accept"); strings.Contains(accept, "multipart") || wantsEventStream(accept) {
			sub.Header.Set("Accept", "application/json")
		}
		wg.Go(func() { next.ServeHTTP(answers[i], sub) })
	}
	wg.Wait()
	writeBatch(w, r, answers)
}

// writeBatch writes the answers as one JSON array: each a JSON object, else an
// error of its text. The headers are the first's, the rate-limit ones the
// last's, Retry-After only if all have one.
func writeBatch(w http.ResponseWriter, r *http.Request, answers []*entryAnswer) {
	h := w.Header()
	for k, v := range answers[0].header {
		switch k {
		case "Content-Length", "Retry-After", "Ratelimit", "Ratelimit-Policy", "Content-Encoding":
			continue
		}
		h[k] = v
	}
	last := answers[len(answers)-1].header
	for _, k := range []string{"Ratelimit", "Ratelimit-Policy"} {
		if v, ok := last[k]; ok {
			h[k] = v
		}
	}
	retry := "" // the longest
	for _, a := range answers {
		ra := a.header.Get("Retry-After")
		if ra == "" {
			retry = ""
			break
		}
		if len(ra) > len(retry) || len(ra) == len(retry) && ra > retry {
			retry = ra
		}
	}
	if retry != "" {
		h.Set("Retry-After", retry)
	}
	if h.Get("Content-Type") == "" {
		setContentType(w, r)
	}
	out := []byte{'['}
	for i, a := range answers {
		if i > 0 {
			out = append(out, ',')
		}
		body := bytes.TrimSpace(a.body.Bytes())
		if len(body) > 0 && body[0] == '{' && json.Valid(body) {
			out = append(out, body...)
			continue
		}
		code := errcode.BadUserInput
		if a.status >= 500 {
			code = errcode.Internal
		}
		out = append(out, errorBody(code, string(body))...)
	}
	out = append(out, ']')
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
}

// entryAnswer records one entry's answer (or a refusing credential reader's).
type entryAnswer struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (a *entryAnswer) Header() http.Header { return a.header }

func (a *entryAnswer) WriteHeader(status int) {
	if a.status == 0 {
		a.status = status
	}
}

func (a *entryAnswer) Write(p []byte) (int, error) {
	if a.status == 0 {
		a.status = http.StatusOK
	}
	return a.body.Write(p)
}

// Flush is a no-op: an entry's answer is sent with the batch's.
func (a *entryAnswer) Flush() {}

// maxBatchAnswers bounds the answer to a refused batch: past it, one error.
const maxBatchAnswers = 100

// refuseEntries answers 400 with n copies of msg, a batching client's error for each operation.
func refuseEntries(w http.ResponseWriter, r *http.Request, n int, msg string) {
	if n <= 0 || n > maxBatchAnswers {
		refuse(w, r, http.StatusBadRequest, errcode.BadUserInput, msg)
		return
	}
	reportRefused(r, errcode.BadUserInput)
	one := errorBody(errcode.BadUserInput, msg)
	out := append(append([]byte{'['}, one...), bytes.Repeat(append([]byte{','}, one...), n-1)...)
	setContentType(w, r)
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(append(out, ']'))
}
