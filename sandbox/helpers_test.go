package sandbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"paygraph/sandbox"
)

type env struct {
	sb     *sandbox.Server
	ts     *httptest.Server
	a, b   sandbox.Business
	client *http.Client
}

func newEnv(t *testing.T, opts sandbox.Options) *env {
	t.Helper()
	sb := sandbox.New(opts)
	ts := httptest.NewServer(sb)
	t.Cleanup(ts.Close)
	biz := sb.Businesses()
	if len(biz) < 2 {
		t.Fatalf("want at least two businesses, got %d", len(biz))
	}
	return &env{sb: sb, ts: ts, a: biz[0], b: biz[1], client: ts.Client()}
}

type resp struct {
	status int
	header http.Header
	body   []byte
}

// do sends a request with the given raw (escaped) path and query; biz nil
// sends no credentials.
func (e *env) do(t *testing.T, method, pathAndQuery string, biz *sandbox.Business) resp {
	t.Helper()
	return e.doHeaders(t, method, pathAndQuery, credHeaders(biz))
}

func credHeaders(biz *sandbox.Business) map[string]string {
	if biz == nil {
		return nil
	}
	return map[string]string{"x-api-key": biz.APIKey, "x-api-secret": biz.APISecret}
}

func (e *env) doHeaders(t *testing.T, method, pathAndQuery string, hdr map[string]string) resp {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, e.ts.URL+pathAndQuery, nil)
	if err != nil {
		t.Fatalf("new request %s: %v", pathAndQuery, err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := e.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, pathAndQuery, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return resp{status: res.StatusCode, header: res.Header, body: body}
}

func (e *env) get(t *testing.T, pathAndQuery string, biz *sandbox.Business) resp {
	t.Helper()
	return e.do(t, http.MethodGet, pathAndQuery, biz)
}

// decode decodes a JSON object keeping numbers as json.Number.
func decode(t *testing.T, body []byte) map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("decode %q: %v", truncate(body), err)
	}
	return m
}

func truncate(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func sortedCopy(s ...string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

func wantKeys(t *testing.T, what string, m map[string]any, want ...string) {
	t.Helper()
	if got, w := keys(m), sortedCopy(want...); !slices.Equal(got, w) {
		t.Errorf("%s keys = %v, want %v", what, got, w)
	}
}

func wantError(t *testing.T, r resp, status int, msg string) {
	t.Helper()
	if r.status != status {
		t.Errorf("status = %d, want %d (body %s)", r.status, status, truncate(r.body))
		return
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type = %q", ct)
	}
	m := decode(t, r.body)
	wantKeys(t, "error body", m, "error")
	if m["error"] != msg {
		t.Errorf("error = %q, want %q", m["error"], msg)
	}
}

func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

func obj(m map[string]any, k string) map[string]any {
	o, _ := m[k].(map[string]any)
	return o
}
