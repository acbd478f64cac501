package gateway

// The REST API's transport as newTransport builds it, under the REST
// client as the gateway wires it: the errors (kind, message, status) as
// restclient reports them, and the count of calls the server sees
// (restclient's retries included); REST_TRANSPORT, a dropped setting.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"

	"paygraph/internal/testenv"
	"paygraph/restclient"
	"paygraph/sandbox"
)

// restOutcome is what the REST client reports of one GetPayment.
type restOutcome struct {
	ID      string
	Kind    string
	Message string
	Status  int
}

func restCall(ctx context.Context, t *testing.T, base, id string, timeout time.Duration) restOutcome {
	t.Helper()
	cfg := Config{RESTMaxInFlight: 16, RESTTimeout: timeout, RESTMaxBody: 4096, RESTMaxPage: 1 << 16}
	rt := newTransport(cfg)
	t.Cleanup(rt.CloseIdleConnections)
	rc, err := restclient.New(restclient.Config{BaseURL: base, HTTPClient: &http.Client{Transport: rt}, DropIdle: rt.DropIdle,
		Timeout: timeout, MaxBodyBytes: cfg.RESTMaxBody, MaxPageBytes: cfg.RESTMaxPage,
		Resilience: restclient.Resilience{MaxRetries: 2, RetryBaseDelay: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	b := sandbox.New(sandbox.Options{}).Businesses()[0]
	ctx = restclient.WithCredentials(ctx, restclient.Credentials{APIKey: b.APIKey, APISecret: b.APISecret})
	p, err := rc.GetPayment(ctx, id)
	if err != nil {
		var e *restclient.Error
		if !errors.As(err, &e) {
			t.Fatalf("not a restclient error: %v", err)
		}
		return restOutcome{Kind: e.Kind.String(), Message: e.Message, Status: e.Status}
	}
	return restOutcome{ID: p.ID}
}

// hang is a REST API that never answers: it holds the call until the
// client gives up and closes the connection.
func hang(_ int64, c net.Conn) { _, _ = io.Copy(io.Discard, c) }

// rawREST answers each request with answer(n), n counting requests from 1,
// and counts them.

func rawREST(t *testing.T, answer func(n int64, c net.Conn)) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					req.Body.Close()
					answer(n.Add(1), c)
				}
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return "http://" + ln.Addr().String(), &n
}

func TestRESTTransportErrors(t *testing.T) {
	t.Parallel()
	sb := sandbox.New(sandbox.Options{})
	id := sb.Payments(sb.Businesses()[0].APIKey)[0].ID
	answer := func(s string) func(int64, net.Conn) {
		return func(_ int64, c net.Conn) { _, _ = io.WriteString(c, s) }
	}
	gz := func(b []byte) []byte {
		var out bytes.Buffer
		w := gzip.NewWriter(&out)
		_, _ = w.Write(b)
		_ = w.Close()
		return out.Bytes()
	}
	record := fmt.Sprintf(`{"id":%q,"pad":%q}`, "pay_prod_1", strings.Repeat("x", 8000)) // over REST_MAX_BODY_BYTES (4096)
	bomb := gz(bytes.Repeat([]byte(" "), 1<<20))
	for _, tc := range []struct {
		name   string
		answer func(n int64, c net.Conn)
		want   string // the message expected
	}{
		{"not found", answer("HTTP/1.1 404 Not Found\r\nContent-Length: 29\r\n\r\n{\"error\":\"payment not found\"}"), "payment not found"},
		{"rate limited", answer("HTTP/1.1 429 Too Many Requests\r\nRetry-After: 2\r\nContent-Length: 0\r\n\r\n"), "REST API answered 429 Too Many Requests"},
		{"503, retried", answer("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n"), "REST API answered 503 Service Unavailable"},
		{"redirect", answer("HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:1/\r\nContent-Length: 0\r\n\r\n"), "REST API answered an unexpected redirect (302)"},
		{"content-length over the limit", answer(fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(record), record)), "larger than the limit of 4096 bytes"},
		{"chunked over the limit", answer(fmt.Sprintf("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", len(record), record)), "larger than the limit of 4096 bytes"},
		{"over the transport's own limit too", answer(fmt.Sprintf("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", 1<<17, strings.Repeat("y", 1<<17))), "larger than the limit of 4096 bytes"},
		{"error answer over the transport's limit", answer(fmt.Sprintf("HTTP/1.1 500 Internal Server Error\r\nContent-Length: %d\r\n\r\n%s", 1<<17, strings.Repeat("y", 1<<17))), "REST API answered 500 Internal Server Error"},
		{"gzip bomb: the limit counts decompressed bytes", answer(fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n%s", len(bomb), bomb)), "larger than the limit of 4096 bytes"},
		{"truncated body", func(_ int64, c net.Conn) {
			_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"id\":")
			c.Close()
		}, "REST API connection failed while reading the answer: connection closed by the REST API"},
		{"closed before an answer, retried", func(_ int64, c net.Conn) { c.Close() }, "REST API unreachable: connection closed by the REST API"},
		{"reset before an answer, retried", func(_ int64, c net.Conn) { _ = c.(*net.TCPConn).SetLinger(0); c.Close() }, "REST API unreachable: connection closed by the REST API"},
		{"garbage", answer("SPDY/3 200 OK\r\n\r\n"), "REST API unreachable: connection failed"},
		{"not JSON", answer("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"), "REST API answered something unexpected"},
		// REST_TIMEOUT is both the call's deadline and the response-header
		// timeout: whichever fires first names it, with either transport.
		{"the REST timeout", hang, "REST API did not answer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			base, _ := rawREST(t, tc.answer)
			if got := restCall(context.Background(), t, base, "pay_prod_1", 200*time.Millisecond); !strings.Contains(got.Message, tc.want) {
				t.Errorf("%+v, want the message %q", got, tc.want)
			}
		})
	}
	t.Run("the sandbox's payment", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(sb)
		t.Cleanup(srv.Close)
		if o := restCall(context.Background(), t, srv.URL, id, time.Second); o.ID != id {
			t.Errorf("%+v", o)
		}
	})
	t.Run("connection refused", func(t *testing.T) {
		t.Parallel()
		ln, _ := net.Listen("tcp", "127.0.0.1:0")
		base := "http://" + ln.Addr().String()
		ln.Close()
		if o := restCall(context.Background(), t, base, "pay_prod_1", time.Second); o.Message != "REST API unreachable: connection refused" {
			t.Errorf("%+v", o)
		}
	})
	t.Run("the caller's deadline", func(t *testing.T) {
		t.Parallel()
		base, _ := rawREST(t, hang)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		if o := restCall(ctx, t, base, "pay_prod_1", 10*time.Second); o.Kind != "timeout" {
			t.Errorf("%+v", o)
		}
	})
}

// TestRESTTransportDropped: REST_TRANSPORT, dropped, is still accepted
// (env or flag, any value it took) and warned of at start; unset, no
// warning.
func TestRESTTransportDropped(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		env    map[string]string
		args   []string
		warned bool
	}{
		{"unset", nil, nil, false},
		{"env fasthttp", map[string]string{"REST_TRANSPORT": "fasthttp"}, nil, true},
		{"env net/http", map[string]string{"REST_TRANSPORT": "net/http"}, nil, true},
		{"flag", nil, []string{"-rest-transport=fasthttp"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := LoadConfig(nil, func(k string) string { return tc.env[k] }, tc.args)
			if err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			g, err := New(cfg, WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			if got := strings.Contains(logs.String(), "REST_TRANSPORT no longer has an effect"); got != tc.warned {
				t.Errorf("warned %v, want %v: %q", got, tc.warned, logs.String())
			}
		})
	}
}

// BenchmarkRESTTransport: one payment through the REST client as the
// gateway wires it (its limits, its transport), 16 callers at once
// against the sandbox on loopback in this process; cpu-µs/call is the
// process's CPU (user and system, the sandbox's share included) per
// call.
//
//	go test -run '^$' -bench RESTTransport -count 3 ./gateway/
func BenchmarkRESTTransport(b *testing.B) {
	sb := sandbox.New(sandbox.Options{})
	srv := httptest.NewServer(sb)
	defer srv.Close()
	biz := sb.Businesses()[0]
	id := sb.Payments(biz.APIKey)[0].ID
	cfg := Config{RESTMaxInFlight: 256, RESTTimeout: 10 * time.Second}
	rt := newTransport(cfg)
	defer rt.CloseIdleConnections()
	rc, err := restclient.New(restclient.Config{BaseURL: srv.URL, HTTPClient: &http.Client{Transport: rt}, Timeout: cfg.RESTTimeout, DropIdle: rt.DropIdle,
		Limiter: restclient.NewLimiter(restclient.LimiterConfig{MaxInFlight: 256, MaxInFlightPerMerchant: 256})})
	if err != nil {
		b.Fatal(err)
	}
	ctx := restclient.WithCredentials(context.Background(), restclient.Credentials{APIKey: biz.APIKey, APISecret: biz.APISecret})
	b.SetParallelism(8) // 16 callers on 2 cores
	b.ReportAllocs()
	start := testenv.ProcessCPU()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := rc.GetPayment(ctx, id); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64((testenv.ProcessCPU()-start).Microseconds())/float64(b.N), "cpu-µs/call")
}
