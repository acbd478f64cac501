package gqlhttp_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"paygraph/gqlhttp"
)

// TestCompress: answers of at least the threshold are compressed as
// Accept-Encoding allows and decode to the same bytes; smaller answers,
// callers that accept no encoding, streams and a zero threshold get the
// body as written.
func TestCompress(t *testing.T) {
	t.Parallel()
	big := `{"data":{"payments":{"nodes":[` + strings.Repeat(`{"id":"pay_0123456789","status":"SUCCEEDED"},`, 99) + `{"id":"pay_x","status":"FAILED"}]}}}`
	small := `{"data":{"payment":null}}`
	for _, tc := range []struct {
		name, acceptEncoding, accept, body string
		min                                int
		wantEncoding                       string
	}{
		{"gzip over the threshold", "gzip", "", big, 1024, "gzip"},
		{"gzip on a tie (Node 20's fetch offers zstd it cannot decode)", "gzip, deflate, br, zstd", "", big, 1024, "gzip"},
		{"zstd when preferred by q-value", "gzip;q=0.5, zstd", "", big, 1024, "zstd"},
		{"zstd alone", "zstd", "", big, 1024, "zstd"},
		{"under the threshold", "gzip", "", small, 1024, ""},
		{"no Accept-Encoding", "", "", big, 1024, ""},
		{"identity only", "identity", "", big, 1024, ""},
		{"event stream untouched", "gzip", "text/event-stream", big, 1024, ""},
		{"threshold 0: off", "gzip", "", big, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mw, err := gqlhttp.Compress(tc.min)
			if err != nil {
				t.Fatal(err)
			}
			h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json; charset=utf-8")
				_, _ = io.WriteString(w, tc.body)
			}))
			req := httptest.NewRequest(http.MethodPost, "/graphql", nil)
			if tc.acceptEncoding != "" {
				req.Header.Set("Accept-Encoding", tc.acceptEncoding)
			}
			if tc.accept != "" {
				req.Header.Set("Accept", tc.accept)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if got := rec.Header().Get("Content-Encoding"); got != tc.wantEncoding {
				t.Fatalf("Content-Encoding %q, want %q", got, tc.wantEncoding)
			}
			raw := append([]byte(nil), rec.Body.Bytes()...)
			var body []byte
			switch tc.wantEncoding {
			case "gzip":
				zr, err := gzip.NewReader(bytes.NewReader(raw))
				if err != nil {
					t.Fatal(err)
				}
				body, err = io.ReadAll(zr)
				if err != nil {
					t.Fatal(err)
				}
			case "zstd":
				zr, err := zstd.NewReader(bytes.NewReader(raw))
				if err != nil {
					t.Fatal(err)
				}
				defer zr.Close()
				body, err = io.ReadAll(zr)
				if err != nil {
					t.Fatal(err)
				}
			default:
				body = raw
			}
			if !bytes.Equal(body, []byte(tc.body)) {
				t.Errorf("decoded body differs: %.100s", body)
			}
			if tc.wantEncoding != "" {
				if len(raw) >= len(tc.body)/4 {
					t.Errorf("compressed %d bytes into %d", len(tc.body), len(raw))
				}
				if !strings.Contains(rec.Header().Get("Vary"), "Accept-Encoding") {
					t.Errorf("Vary %q", rec.Header().Values("Vary"))
				}
			}
		})
	}
}
