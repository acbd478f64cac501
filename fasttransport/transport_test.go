package fasttransport_test

// What this transport adds to the comparison with net/http's: the bound
// on an answer held in memory, gzip bombs, callers kept apart while
// fasthttp pools its buffers, the pool's wait, and the leaf rule.

import (
	"bytes"
	"context"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"

	"paygraph/fasttransport"
)

// TestMaxResponseBytesFor: each call is held to its own limit.
func TestMaxResponseBytesFor(t *testing.T) {
	body := strings.Repeat("x", 10000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	tr := fasttransport.New(fasttransport.Config{MaxResponseBytes: 1 << 20, MaxResponseBytesFor: func(r *http.Request) int {
		if strings.HasPrefix(r.URL.Path, "/small/") {
			return 4096
		}
		return 0 // MaxResponseBytes
	}})
	t.Cleanup(tr.CloseIdleConnections)
	for _, tc := range []struct {
		path    string
		wantLen int64
		wantN   int
	}{
		{"/small/1", 10000, 0}, // refused: its announced length is over its limit
		{"/large/1", 10000, 10000},
		{"/small/2", 10000, 0},
	} {
		t.Run(tc.path, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+tc.path, nil)
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.ContentLength != tc.wantLen || len(b) != tc.wantN {
				t.Errorf("length %d, %d bytes read", resp.ContentLength, len(b))
			}
		})
	}
}

func TestLargerThanMaxResponseBytes(t *testing.T) {
	const limit = 64 << 10
	big := strings.Repeat("x", 3*limit)
	for _, tc := range []struct {
		name    string
		chunked bool
		status  int
		wantLen int64
	}{
		{"content-length over the limit: not read", false, 200, 3 * limit},
		{"chunked over the limit: read to the limit", true, 200, limit + 1},
		{"an error answer over the limit", false, 503, 3 * limit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				w.Header().Set("Retry-After", "7")
				if !tc.chunked {
					w.Header().Set("Content-Length", strconv.Itoa(len(big)))
				}
				w.WriteHeader(tc.status)
				for i := 0; i < len(big); i += 4096 {
					_, _ = io.WriteString(w, big[i:i+4096])
					if tc.chunked {
						w.(http.Flusher).Flush()
					}
				}
			}))
			t.Cleanup(srv.Close)
			tr := fasttransport.New(fasttransport.Config{MaxResponseBytes: limit})
			t.Cleanup(tr.CloseIdleConnections)
			req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status || resp.ContentLength != tc.wantLen || len(b) != 0 || err != nil ||
				resp.Header.Get("Retry-After") != "7" || calls.Load() != 1 {
				t.Errorf("status %d, length %d, %d bytes of body (%v), Retry-After %q, %d calls",
					resp.StatusCode, resp.ContentLength, len(b), err, resp.Header.Get("Retry-After"), calls.Load())
			}
		})
	}
}

// TestGzipBombStaysBounded: a body of 64 KB that decompresses to 64 MB
// is decompressed as it is read; a caller reading 1 MB of it allocates
// about that, not the 64 MB.
func TestGzipBombStaysBounded(t *testing.T) {
	var bomb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&bomb, gzip.DefaultCompression)
	zeros := make([]byte, 1<<20)
	for range 64 {
		_, _ = zw.Write(zeros)
	}
	_ = zw.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept-Encoding") != "gzip" {
			t.Errorf("Accept-Encoding %q", r.Header.Get("Accept-Encoding"))
		}
		w.Header().Set("Content-Encoding", "gzip")
		_, _ = w.Write(bomb.Bytes())
	}))
	t.Cleanup(srv.Close)
	tr := fasttransport.New(fasttransport.Config{MaxResponseBytes: 4 << 20})
	t.Cleanup(tr.CloseIdleConnections)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20+1))
	resp.Body.Close()
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("read %d bytes of the bomb (%d compressed); allocated %.1f MB", n, bomb.Len(), float64(alloc)/(1<<20))
	if err != nil || n != 1<<20+1 || resp.ContentLength != -1 || resp.Header.Get("Content-Encoding") != "" || !resp.Uncompressed {
		t.Errorf("read %d (%v), length %d, encoding %q", n, err, resp.ContentLength, resp.Header.Get("Content-Encoding"))
	}
	if alloc > 8<<20 { // the compressed body, the decompressor's state, the reads
		t.Errorf("allocated %d bytes to read 1 MB", alloc)
	}
}

// TestCallersKeptApart: fasthttp pools its requests, responses and their
// buffers; a body handed over is never reused before its Close, so that
// concurrent callers with different credentials (and bodies held open
// while other calls run) each read their own answer. Run with -race.
func TestCallersKeptApart(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("X-Api-Key")
		w.Header().Set("X-Echo", key)
		// Bodies of different lengths, so that a reused buffer shows.
		_, _ = io.WriteString(w, `{"key":"`+key+`","pad":"`+strings.Repeat("p", len(key)*7)+`"}`)
	}))
	t.Cleanup(srv.Close)
	tr := fasttransport.New(fasttransport.Config{MaxConnsPerHost: 4}) // fewer than the callers: they wait
	t.Cleanup(tr.CloseIdleConnections)
	var wg sync.WaitGroup
	var bad atomic.Int64
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("ak_test_%d_%s", g, strings.Repeat("k", g))
			var held []*http.Response
			for i := range 60 {
				req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/v1/payments/p", nil)
				req.Header = http.Header{"X-Api-Key": {key}, "X-Api-Secret": {"sk_" + key}}
				resp, err := tr.RoundTrip(req)
				if err != nil {
					t.Error(err)
					bad.Add(1)
					return
				}
				held = append(held, resp)
				if i%3 != 2 {
					continue
				}
				// Read the three held answers after later calls were made.
				for _, r := range held {
					b, err := io.ReadAll(r.Body)
					_ = r.Body.Close()
					want := `{"key":"` + key + `","pad":"` + strings.Repeat("p", len(key)*7) + `"}`
					if err != nil || string(b) != want || r.Header.Get("X-Echo") != key {
						bad.Add(1)
					}
				}
				held = held[:0]
			}
		}()
	}
	wg.Wait()
	if bad.Load() != 0 {
		t.Errorf("%d answers were not their caller's", bad.Load())
	}
}

// TestBodyClosed: a body reads nothing after Close, and a second Close
// gives nothing back twice.
func TestBodyClosed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "answer") }))
	t.Cleanup(srv.Close)
	tr := fasttransport.New(fasttransport.Config{})
	t.Cleanup(tr.CloseIdleConnections)
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if n, err := resp.Body.Read(make([]byte, 8)); n != 0 || err == nil {
		t.Errorf("read after close: %d, %v", n, err)
	}
	if err := resp.Body.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
}

// TestPoolWaits: with every connection busy a call waits for one (it
// never fails for want of one), and no more connections are opened.
func TestPoolWaits(t *testing.T) {
	var conns, inFlight, peak atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		time.Sleep(20 * time.Millisecond)
		inFlight.Add(-1)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	tr := fasttransport.New(fasttransport.Config{MaxConnsPerHost: 2})
	t.Cleanup(tr.CloseIdleConnections)
	var wg sync.WaitGroup
	var failed atomic.Int64
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
			resp, err := tr.RoundTrip(req)
			if err != nil {
				failed.Add(1)
				return
			}
			resp.Body.Close()
		}()
	}
	wg.Wait()
	if failed.Load() != 0 || conns.Load() > 2 || peak.Load() > 2 {
		t.Errorf("%d failed, %d connections, %d at once", failed.Load(), conns.Load(), peak.Load())
	}
}

// TestLeaf: the package imports no package of paygraph (docs/design.md).
func TestLeaf(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			if p := strings.Trim(imp.Path.Value, `"`); p == "paygraph" || strings.HasPrefix(p, "paygraph/") {
				t.Errorf("%s imports %s", f, p)
			}
		}
	}
}
