package gqlhttp_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/99designs/gqlgen/graphql"

	"paygraph/gqlhttp"
	"paygraph/graph"
)

// TestAnswerLengthAnnounced: a whole JSON answer, over net/http's 2 KiB
// that it would otherwise send chunked, goes with a Content-Length that
// matches its body; compressed, with the compressed body's length or none,
// never the identity body's. Errors and refusals too.
func TestAnswerLengthAnnounced(t *testing.T) {
	t.Parallel()
	sb, rc := sandboxREST(t, 16)
	a := sb.Businesses()[0]
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

// fieldTap is a field interceptor that changes nothing; the gqlgen server
// then runs every field itself, without the root fast paths.
type fieldTap struct{}

func (fieldTap) ExtensionName() string                   { return "fieldTap" }
func (fieldTap) Validate(graphql.ExecutableSchema) error { return nil }
func (fieldTap) InterceptField(ctx context.Context, next graphql.Resolver) (any, error) {
	return next(ctx)
}

// TestFastAnswersWrittenAsGqlgens: the answers of the root fast paths,
// written by appendHTMLSafe (graph.IsFastAnswer), are byte for byte what
// the edge writes of gqlgen's own answers to the same queries, with the
// sandbox's texts ('&', '<' and names beyond ASCII among them).
func TestFastAnswersWrittenAsGqlgens(t *testing.T) {
	t.Parallel()
	sb, rc := sandboxREST(t, 16)
	a := sb.Businesses()[0]
	fast := newEdge(rc, edgeConfig{})
	gqlgen := newEdge(rc, edgeConfig{server: graph.ServerConfig{Extensions: []graphql.HandlerExtension{fieldTap{}}}})
	post := func(h http.Handler, body string) string {
		req := httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Api-Key", a.APIKey)
		req.Header.Set("X-Api-Secret", a.APISecret)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Body.String()
	}
	const item = `id status amount { amount paisa currency } customer { name email address } createdAt`
	page := post(gqlgen, `{"query":"{ payments(first: 100) { nodes { `+item+` } } }"}`)
	if !strings.Contains(page, `\u0026`) && !strings.Contains(page, `\u003c`) {
		t.Fatalf("no escaped '&' or '<' in the sandbox's first 100 payments: the test would not see a wrong escape")
	}
	pays := sb.Payments(a.APIKey)
	id := pays[0].ID
	for _, tc := range []struct{ name, body string }{
		{"one payment", `{"query":"query P($id: ID!) { payment(id: $id) { ` + item + ` } }","variables":{"id":"` + id + `"}}`},
		{"aliases", `{"query":"{ a: payment(id: \"` + id + `\") { ` + item + ` } b: payment(id: \"` + pays[1].ID + `\") { id customer { name } } }"}`},
		{"a list of 100", `{"query":"{ payments(first: 100) { nodes { ` + item + ` } pageInfo { hasNextPage endCursor } } }"}`},
		{"a list's edges", `{"query":"{ payments(first: 30) { edges { cursor node { ` + item + ` } } } }"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := post(gqlgen, tc.body)
			if !strings.HasPrefix(want, `{"data":{`) {
				t.Fatalf("gqlgen's answer: %.300s", want)
			}
			if got := post(fast, tc.body); got != want {
				t.Errorf("the fast path's answer differs:\n got %.300s\nwant %.300s", got, want)
			}
		})
	}
}

// TestFastAnswerBuffersKeptApart: the root fast paths' answers and the
// edge's pooled response buffers (responseBuffers) never carry one
// caller's bytes into another's answer. Two merchants' callers, sixteen at once over real
// connections, asking payments, aliases and pages of different lengths:
// every answer is byte for byte the one its caller got alone, never a
// byte of another's.
func TestFastAnswerBuffersKeptApart(t *testing.T) {
	t.Parallel()
	sb, rc := sandboxREST(t, 64)
	srv := httptest.NewServer(newEdge(rc, edgeConfig{}))
	defer srv.Close()
	type ask struct{ key, secret, body, want string }
	post := func(a ask) (string, error) {
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/graphql", strings.NewReader(a.body))
		if err != nil {
			return "", err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Api-Key", a.key)
		req.Header.Set("X-Api-Secret", a.secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	const item = `id status amount { amount currency } customer { name email address } createdAt`
	var asks []ask
	for _, biz := range sb.Businesses()[:2] {
		pays := sb.Payments(biz.APIKey)
		for _, body := range []string{
			`{"query":"{ payment(id: \"` + pays[0].ID + `\") { ` + item + ` } }"}`,
			`{"query":"{ a: payment(id: \"` + pays[1].ID + `\") { ` + item + ` } b: payment(id: \"` + pays[2].ID + `\") { id } }"}`,
			`{"query":"{ payments(first: 3) { nodes { ` + item + ` } } }"}`,
			`{"query":"{ payments(first: 40) { nodes { ` + item + ` } pageInfo { endCursor } } }"}`,
		} {
			a := ask{key: biz.APIKey, secret: biz.APISecret, body: body}
			var err error
			if a.want, err = post(a); err != nil || !strings.HasPrefix(a.want, `{"data":{`) {
				t.Fatalf("alone: %v %.200s", err, a.want)
			}
			asks = append(asks, a)
		}
	}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 40 {
				a := asks[(g+i*3)%len(asks)]
				got, err := post(a)
				if err != nil {
					t.Error(err)
					return
				}
				if got != a.want {
					t.Errorf("caller %s: answer differs from its own alone:\n got %.300s\nwant %.300s", a.key, got, a.want)
					return
				}
			}
		})
	}
	wg.Wait()
}
