package gqlhttp_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"paygraph/graph/errcode"
	"strings"
	"testing"

	"paygraph/gqlhttp"
)

// TestRequestSize: a body over the limit is refused (413 BAD_USER_INPUT)
// before the handler reads a byte of it, whether its length is announced,
// unknown (chunked) or announced short; bodies within it reach the
// handler whole.
func TestRequestSize(t *testing.T) {
	t.Parallel()
	const limit = 16
	for _, tc := range []struct {
		name          string
		body          string
		contentLength int64 // -2: as the body is
		wantStatus    int   // 0: reached the handler, body whole
		wantReadErr   bool  // reached, but reading past the limit fails
	}{
		{"empty", "", -2, 0, false},
		{"at the limit", strings.Repeat("a", limit), -2, 0, false},
		{"announced over", strings.Repeat("a", limit+1), -2, http.StatusRequestEntityTooLarge, false},
		{"chunked within", strings.Repeat("a", limit), -1, 0, false},
		{"chunked over", strings.Repeat("a", limit+1), -1, http.StatusRequestEntityTooLarge, false},
		{"announced short", strings.Repeat("a", 4*limit), 8, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reached := false
			var got []byte
			var readErr error
			h := gqlhttp.RequestSize(limit)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				reached = true
				got, readErr = io.ReadAll(r.Body)
				w.WriteHeader(http.StatusNoContent)
			}))
			req := httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader(tc.body))
			if tc.contentLength != -2 {
				req.ContentLength = tc.contentLength
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if tc.wantStatus != 0 {
				if reached || rec.Code != tc.wantStatus {
					t.Fatalf("reached %v, status %d, want %d", reached, rec.Code, tc.wantStatus)
				}
				if code := decodeRefusal(t, rec); code != errcode.BadUserInput {
					t.Errorf("code %s", code)
				}
				return
			}
			if !reached {
				t.Fatalf("refused: %d %s", rec.Code, rec.Body)
			}
			var tooBig *http.MaxBytesError
			if tc.wantReadErr {
				if !errors.As(readErr, &tooBig) || len(got) > limit {
					t.Errorf("read %d bytes, error %v; want at most %d and a MaxBytesError", len(got), readErr, limit)
				}
				return
			}
			if readErr != nil || string(got) != tc.body {
				t.Errorf("read %q, %v; want the body whole", got, readErr)
			}
		})
	}
}
