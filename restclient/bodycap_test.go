package restclient

import (
	"bytes"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// countingTransport counts the response body bytes the client reads.
type countingTransport struct {
	read atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		resp.Body = &countingBody{ReadCloser: resp.Body, n: &c.read}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	k, err := b.ReadCloser.Read(p)
	b.n.Add(int64(k))
	return k, err
}

// padTo pads a JSON body with trailing spaces to exactly n bytes.
func padTo(t *testing.T, body string, n int) string {
	t.Helper()
	if len(body) > n {
		t.Fatalf("body of %d bytes is already over %d", len(body), n)
	}
	return body + strings.Repeat(" ", n-len(body))
}

// endless writes the start of a JSON string and then never ends it, until
// the client goes away; without a Content-Length (chunked).
func endless(w http.ResponseWriter, r *http.Request) {
	_, _ = io.WriteString(w, `{"id":"pay_1","data":[],"pad":"`)
	for r.Context().Err() == nil {
		if _, err := w.Write(endlessChunk); err != nil {
			return
		}
	}
}

// TestBodyCaps: a single record may be REST_MAX_BODY_BYTES and a list
// page MaxPageBytes; one byte more is UPSTREAM_ERROR naming the
// limit, whether the body says its length (refused before reading a byte)
// or not (read to the limit plus one byte, never further).
func TestBodyCaps(t *testing.T) {
	t.Parallel()
	const id = "pay_prod_0123456789abcdef0123456789abcdef"
	getPayment := func(c *Client) error { _, err := c.GetPayment(credCtx(), id); return err }
	listPage := func(c *Client) error { _, err := c.ListPayments(credCtx(), ListParams{Limit: 2}); return err }
	for _, tc := range []struct {
		name     string
		cfg      Config
		call     func(*Client) error
		limit    int
		body     func(t *testing.T, limit int) string // "" -> endless
		chunked  bool
		wantOK   bool
		wantRead int64 // most body bytes read; 0: the limit plus one
	}{
		{name: "record at the default cap", call: getPayment, limit: DefaultMaxBodyBytes,
			body: func(t *testing.T, n int) string { return padTo(t, paymentBody, n) }, wantOK: true},
		{name: "record one byte over the default cap", call: getPayment, limit: DefaultMaxBodyBytes,
			body: func(t *testing.T, n int) string { return padTo(t, paymentBody, n+1) }, wantRead: -1},
		{name: "record one byte over, chunked", call: getPayment, limit: DefaultMaxBodyBytes, chunked: true,
			body: func(t *testing.T, n int) string { return padTo(t, paymentBody, n+1) }},
		{name: "record endless", call: getPayment, limit: DefaultMaxBodyBytes},
		{name: "record within the page cap is still a record", call: getPayment, limit: DefaultMaxBodyBytes,
			body: func(t *testing.T, n int) string { return padTo(t, paymentBody, 4*n) }, wantRead: -1},
		{name: "page at the default cap", call: listPage, limit: DefaultMaxPageBytes,
			body: func(t *testing.T, n int) string { return padTo(t, listBody, n) }, wantOK: true},
		{name: "page at the default cap, chunked", call: listPage, limit: DefaultMaxPageBytes, chunked: true,
			body: func(t *testing.T, n int) string { return padTo(t, listBody, n) }, wantOK: true},
		{name: "page one byte over the default cap", call: listPage, limit: DefaultMaxPageBytes,
			body: func(t *testing.T, n int) string { return padTo(t, listBody, n+1) }, wantRead: -1},
		{name: "page endless", call: listPage, limit: DefaultMaxPageBytes},
		{name: "record at a configured cap", cfg: Config{MaxBodyBytes: 4096}, call: getPayment, limit: 4096, chunked: true,
			body: func(t *testing.T, n int) string { return padTo(t, paymentBody, n) }, wantOK: true},
		{name: "record over a configured cap", cfg: Config{MaxBodyBytes: 4096}, call: getPayment, limit: 4096, chunked: true,
			body: func(t *testing.T, n int) string { return padTo(t, paymentBody, n+1) }},
		{name: "page over a configured cap", cfg: Config{MaxPageBytes: 8192}, call: listPage, limit: 8192},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var body string
			if tc.body != nil {
				body = tc.body(t, tc.limit)
			}
			srv := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
				if tc.body == nil {
					endless(w, r)
					return
				}
				if !tc.chunked {
					w.Header().Set("Content-Length", strconv.Itoa(len(body)))
				}
				for i := 0; i < len(body); i += 1000 { // several writes: chunked when no length is set
					_, _ = io.WriteString(w, body[i:min(i+1000, len(body))])
					w.(http.Flusher).Flush()
				}
			})
			rt := &countingTransport{}
			cfg := tc.cfg
			cfg.BaseURL, cfg.HTTPClient = srv.URL, &http.Client{Transport: rt}
			cfg.Resilience = Resilience{}
			c := newClient(t, cfg)
			err := tc.call(c)
			if tc.wantOK {
				if err != nil {
					t.Fatalf("err %v", err)
				}
				return
			}
			what := "one record"
			if tc.cfg.MaxPageBytes != 0 || tc.limit == DefaultMaxPageBytes {
				what = "a list page"
			}
			want := "a body larger than the limit of " + strconv.Itoa(tc.limit) + " bytes for " + what
			if KindOf(err) != KindUpstream || !strings.Contains(err.Error(), want) {
				t.Fatalf("err %v, want KindUpstream %q", err, want)
			}
			maxRead := int64(tc.limit) + 1
			if tc.wantRead < 0 {
				maxRead = 0 // its Content-Length said it all
			}
			if got := rt.read.Load(); got > maxRead {
				t.Errorf("read %d body bytes, want at most %d", got, maxRead)
			}
			if n := srv.calls.Load(); n != 1 {
				t.Errorf("%d REST calls, want 1 (an oversized body is not retried)", n)
			}
		})
	}
}

// TestReadBodyStaysWithinTheCap: whatever the body and the buffer the
// pool hands out, the buffer never grows past the limit and at most the
// limit plus one byte is read.
func TestReadBodyStaysWithinTheCap(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		limit      int64
		bodyLen    int
		size       int64 // Content-Length, -1 unknown
		pooled     int   // capacity of the buffer from the pool
		wantErr    bool
		wantMaxCap int
	}{
		{"empty", 4096, 0, -1, 0, false, 0},
		{"small, unknown length", 65536, 1000, -1, 0, false, 4096},
		{"exact fit of a known length", 65536, 35000, 35000, 0, false, 35001}, // + the byte that reads io.EOF
		{"known length at the limit", 65536, 65536, 65536, 0, false, 65536},
		{"known length in a big pooled buffer", 65536, 35000, 35000, 200000, false, 200000},
		{"at the limit, unknown length", 65536, 65536, -1, 0, false, 65536},
		{"one over, unknown length", 65536, 65537, -1, 0, true, 65536},
		{"far over, unknown length", 65536, 10 << 20, -1, 512, true, 65536},
		{"page limit, far over", 1 << 20, 10 << 20, -1, 0, true, 1 << 20},
		{"odd limit", 5000, 6000, -1, 0, true, 5000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := &countingBody{ReadCloser: io.NopCloser(io.LimitReader(zeros{}, int64(tc.bodyLen))), n: new(atomic.Int64)}
			lr := &limitedReader{r: src, n: tc.limit}
			buf, _, err := readBody(lr, make([]byte, 0, tc.pooled), tc.size)
			if (err != nil) != tc.wantErr || (tc.wantErr && !lr.exceeded) {
				t.Fatalf("err %v (exceeded %v), want error %v", err, lr.exceeded, tc.wantErr)
			}
			if !tc.wantErr && len(buf) != tc.bodyLen {
				t.Errorf("read %d bytes of %d", len(buf), tc.bodyLen)
			}
			if cap(buf) > tc.wantMaxCap {
				t.Errorf("buffer grew to %d, want at most %d", cap(buf), tc.wantMaxCap)
			}
			if got := src.n.Load(); got > tc.limit+1 {
				t.Errorf("read %d bytes from the body, over the limit %d plus one", got, tc.limit)
			}
		})
	}
}

var endlessChunk = bytes.Repeat([]byte("x"), 32<<10)

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestOversizedBodyAllocation measures what one call against a REST API
// sending an endless body allocates (runtime.MemStats.TotalAlloc, the
// test's httptest server included): about the cap, not more. Before the
// caps it was 67 MB per call (the body read up to 8 MiB into a doubling
// bytes.Buffer, then handed to a json.Decoder that copied it again);
// now about 27 KB for a record (the capped buffer comes from the pool; the
// rest is a fresh connection at both ends) and 1.09 times the cap for a
// page (its 1 MiB buffer is too big to pool). Figures are logged (go test
// -v -run TestOversizedBodyAllocation).
func TestOversizedBodyAllocation(t *testing.T) {
	srv := newTestServer(t, endless)
	for _, tc := range []struct {
		name  string
		cap   int
		call  func(*Client) error
		calls int
	}{
		{"record", DefaultMaxBodyBytes, func(c *Client) error { _, err := c.GetPayment(credCtx(), "pay_1"); return err }, 50},
		{"page", DefaultMaxPageBytes, func(c *Client) error { _, err := c.ListPayments(credCtx(), ListParams{}); return err }, 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t, Config{BaseURL: srv.URL})
			if err := tc.call(c); KindOf(err) != KindUpstream { // warm up: connections, pools
				t.Fatalf("err %v", err)
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			for range tc.calls {
				if err := tc.call(c); KindOf(err) != KindUpstream {
					t.Fatalf("err %v", err)
				}
			}
			runtime.ReadMemStats(&after)
			perCall := float64(after.TotalAlloc-before.TotalAlloc) / float64(tc.calls)
			t.Logf("%s: %.0f bytes allocated per call against an endless body (cap %d: %.2fx)", tc.name, perCall, tc.cap, perCall/float64(tc.cap))
			// 1.33x the cap for growing the buffer by fours, plus the
			// HTTP machinery of both ends (a connection is dropped after
			// every oversized body: a new one each call).
			if limit := 1.5*float64(tc.cap) + 128<<10; perCall > limit {
				t.Errorf("%.0f bytes per call, over %.0f", perCall, limit)
			}
		})
	}
}
