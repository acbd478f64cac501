package gqlhttp_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"paygraph/gqlhttp"
	"paygraph/restclient"
	"paygraph/sandbox"
)

// TestAnswerLengthAnnounced: a whole JSON answer, over net/http's 2 KiB
// that it would otherwise send chunked, goes with a Content-Length that
// matches its body; compressed, with the compressed body's length or none,
// never the identity body's. Errors and refusals too.
func TestAnswerLengthAnnounced(t *testing.T) {
	sb := sandbox.New(sandbox.Options{})
	a := sb.Businesses()[0]
	rc, err := restclient.New(restclient.Config{BaseURL: "http://sandbox.invalid", HTTPClient: &http.Client{Transport: inProcess{sb}},
		Limiter: restclient.NewLimiter(restclient.LimiterConfig{MaxInFlight: 16})})
	if err != nil {
		t.Fatal(err)
	}
	compress, err := gqlhttp.Compress(1024)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(compress(newEdge(rc, edgeConfig{})))
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	const list = `{"query":"{ payments(first: 20) { nodes { id status amount { amount currency } customer { name email } createdAt } } }"}`
	for _, tc := range []struct {
		name, body, acceptEncoding string
		wantGzip                   bool
		minBytes                   int
	}{
		{"a list of 20", list, "", false, 2048},
		{"a list of 20, gzip", list, "gzip", true, 0},
		{"an invalid query", `{"query":"{ nope }"}`, "", false, 0},
		{"a small answer", `{"query":"{ __typename }"}`, "", false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, srv.URL+"/graphql", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Api-Key", a.APIKey)
			req.Header.Set("X-Api-Secret", a.APISecret)
			if tc.acceptEncoding != "" {
				req.Header.Set("Accept-Encoding", tc.acceptEncoding)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.TransferEncoding) > 0 {
				t.Errorf("Transfer-Encoding %q: the answer went chunked", resp.TransferEncoding)
			}
			if cl := resp.Header.Get("Content-Length"); cl != "" && cl != strconv.Itoa(len(raw)) {
				t.Errorf("Content-Length %s, body %d bytes", cl, len(raw))
			}
			body := raw
			if tc.wantGzip {
				if resp.Header.Get("Content-Encoding") != "gzip" {
					t.Fatalf("Content-Encoding %q, want gzip", resp.Header.Get("Content-Encoding"))
				}
				zr, err := gzip.NewReader(bytes.NewReader(raw))
				if err != nil {
					t.Fatal(err)
				}
				if body, err = io.ReadAll(zr); err != nil {
					t.Fatal(err)
				}
			} else if resp.ContentLength != int64(len(raw)) {
				t.Errorf("ContentLength %d, body %d bytes", resp.ContentLength, len(raw))
			}
			if len(body) < tc.minBytes || !bytes.HasPrefix(body, []byte(`{"`)) || !bytes.HasSuffix(body, []byte("}")) {
				t.Errorf("body (%d bytes, want at least %d): %.200s", len(body), tc.minBytes, body)
			}
		})
	}
}
