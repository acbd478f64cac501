package gqlhttp

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// echoEntries is a next handler that answers each request with its body
// and how it came: one request per entry, each with its own body.
type echoEntries struct {
	mu    sync.Mutex
	calls int
}

func (e *echoEntries) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	e.calls++
	e.mu.Unlock()
	body, _ := io.ReadAll(r.Body)
	if strings.Contains(string(body), "plain") {
		http.Error(w, "origin not allowed", http.StatusForbidden)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	b, _ := json.Marshal(map[string]any{"data": map[string]string{
		"body": string(body), "encoding": r.Header.Get("Accept-Encoding"), "accept": r.Header.Get("Accept")}})
	w.Write(b)
}

func TestBatches(t *testing.T) {
	t.Parallel()
	op := func(name string) string { return `{"query":"{ ` + name + ` }"}` }
	for _, tc := range []struct {
		name, body, accept string
		status             int
		entries            []string // the bodies each entry's request saw, in order; nil: next not called per entry
		passThrough        bool     // next got the request as it came
		wantMsg            string
	}{
		{name: "three entries in order", body: "[" + op("a") + "," + op("b") + "," + op("c") + "]", status: 200, entries: []string{op("a"), op("b"), op("c")}},
		{name: "blanks before the array", body: " \n\t[" + op("a") + "]", status: 200, entries: []string{op("a")}},
		{name: "an object is no batch", body: " " + op("a"), status: 200, passThrough: true},
		{name: "over the cap", body: "[" + strings.Repeat(op("a")+",", 3) + op("a") + "]", status: 400, wantMsg: "at most 3 operations; this one has 4"},
		{name: "empty array", body: "[]", status: 400, wantMsg: "JSON array of request objects"},
		{name: "not JSON", body: "[" + op("a") + ",", status: 400, wantMsg: "JSON array of request objects"},
		{name: "over the body limit", body: "[" + op(strings.Repeat("x", 2048)) + "]", status: 413, wantMsg: "larger than the limit"},
		{name: "a plain-text answer wrapped", body: "[" + op("plain") + "," + op("b") + "]", status: 200, entries: []string{"origin not allowed", op("b")}},
		{name: "streams asked for are not entries' answers", body: "[" + op("a") + "]", accept: "multipart/mixed; deferSpec=20220824, application/json", status: 200, entries: []string{op("a")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			next := &echoEntries{}
			h := Batches("/graphql", 3, 1024, nil, next)
			req := httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept-Encoding", "gzip")
			if tc.accept != "" {
				req.Header.Set("Accept", tc.accept)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body)
			}
			if tc.passThrough {
				var one struct{ Data struct{ Body string } }
				if err := json.Unmarshal(rec.Body.Bytes(), &one); err != nil || one.Data.Body != tc.body {
					t.Fatalf("next saw %q (%v); want the body as sent, %q", one.Data.Body, err, tc.body)
				}
				return
			}
			if tc.wantMsg != "" {
				if !strings.Contains(rec.Body.String(), tc.wantMsg) || !strings.Contains(rec.Body.String(), "BAD_USER_INPUT") {
					t.Errorf("answer %s; want BAD_USER_INPUT saying %q", rec.Body, tc.wantMsg)
				}
				if next.calls != 0 {
					t.Errorf("%d entries ran; a refused batch runs none", next.calls)
				}
				return
			}
			var answers []struct {
				Data struct {
					Body, Encoding, Accept string
				}
				Errors []struct{ Message string }
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &answers); err != nil || len(answers) != len(tc.entries) {
				t.Fatalf("want %d answers: %v: %s", len(tc.entries), err, rec.Body)
			}
			for i, want := range tc.entries {
				a := answers[i]
				got := a.Data.Body
				if len(a.Errors) == 1 {
					got = a.Errors[0].Message
				}
				if got != want {
					t.Errorf("answer %d: %q, want %q", i, got, want)
				}
				if a.Data.Encoding != "" || strings.Contains(a.Data.Accept, "multipart") {
					t.Errorf("entry %d asked for encoding %q, accept %q: an entry's answer is one JSON object", i, a.Data.Encoding, a.Data.Accept)
				}
			}
			if next.calls != len(tc.entries) {
				t.Errorf("next ran %d times for %d entries", next.calls, len(tc.entries))
			}
		})
	}
}

// TestBatchesOff: with a cap of 0 every request, batches included, goes
// to next as it came (the POST transport refuses batches then).
func TestBatchesOff(t *testing.T) {
	t.Parallel()
	next := &echoEntries{}
	h := Batches("/graphql", 0, 1024, nil, next)
	req := httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader(`[{"query":"{ a }"}]`))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if next.calls != 1 || !strings.Contains(rec.Body.String(), `[{\"query\"`) {
		t.Errorf("next ran %d times, answer %s; want the batch passed on whole", next.calls, rec.Body)
	}
}
