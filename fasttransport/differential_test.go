package fasttransport_test

// Differential tests: the same server, the net/http transport as the
// gateway configured it and this one, the same outcome as a caller sees
// it (status, canonical headers, body, and the error as errors.Is/As and
// net.Error classify it, which is all restclient looks at).

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"paygraph/fasttransport"
)

// transports are the two under comparison, configured alike (the
// gateway's newTransport).
func transports(t *testing.T, headerTimeout time.Duration, roots *x509.CertPool) map[string]http.RoundTripper {
	t.Helper()
	var tc *tls.Config
	if roots != nil {
		tc = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	}
	std := &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          64,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   5 * time.Second,
		ResponseHeaderTimeout: headerTimeout,
		TLSClientConfig:       tc,
	}
	fast := fasttransport.New(fasttransport.Config{
		MaxConnsPerHost:       64,
		ResponseHeaderTimeout: headerTimeout,
		TLSConfig:             tc,
		MaxResponseBytes:      1 << 20,
	})
	t.Cleanup(std.CloseIdleConnections)
	t.Cleanup(fast.CloseIdleConnections)
	return map[string]http.RoundTripper{"net/http": std, "fasthttp": fast}
}

// outcome is what a caller sees of one call.
type outcome struct {
	Err           string // class of RoundTrip's error
	Status        int
	Header        http.Header
	ContentLength int64
	Body          string
	ReadErr       string // class of the body read's error
	Uncompressed  bool
}

// class names an error as restclient's transportError and connFailure
// tell errors apart.
func class(ctx context.Context, err error) string {
	if err == nil {
		return ""
	}
	var ne net.Error
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var recErr tls.RecordHeaderError
	switch {
	case ctx != nil && ctx.Err() != nil:
		return "context: " + ctx.Err().Error()
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.As(err, &dnsErr):
		return "dns"
	case errors.As(err, &certErr), errors.As(err, &recErr):
		return "tls"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "closed"
	}
	return "other" // restclient: "connection failed"
}

// roundTrip makes one call of url through rt and reads its whole body.
func roundTrip(ctx context.Context, rt http.RoundTripper, method, url string, hdr http.Header) outcome {
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		panic(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return outcome{Err: class(ctx, err)}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	h := resp.Header.Clone()
	h.Del("Date")
	return outcome{Status: resp.StatusCode, Header: h, ContentLength: resp.ContentLength, Body: string(b),
		ReadErr: class(ctx, err), Uncompressed: resp.Uncompressed}
}

// same runs call against both transports and fails when they differ.
func same(t *testing.T, rts map[string]http.RoundTripper, call func(rt http.RoundTripper) outcome) outcome {
	t.Helper()
	want := call(rts["net/http"])
	got := call(rts["fasthttp"])
	if !reflect.DeepEqual(want, got) {
		t.Errorf("outcomes differ:\nnet/http: %+v\nfasthttp: %+v", want, got)
	}
	return got
}

// rawServer answers every connection with serve (a hand-written HTTP/1.x
// server, for answers net/http's server would not send), and counts the
// requests it reads.
type rawServer struct {
	ln    net.Listener
	reqs  atomic.Int64
	conns atomic.Int64
	wg    sync.WaitGroup
}

func newRawServer(t *testing.T, serve func(s *rawServer, c net.Conn, br *bufio.Reader)) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{ln: ln}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.conns.Add(1)
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer c.Close()
				serve(s, c, bufio.NewReader(c))
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); s.wg.Wait() })
	return s
}

func (s *rawServer) url() string { return "http://" + s.ln.Addr().String() }

// readRequest reads one request's head (these tests send no bodies); false
// when the connection ended first.
func (s *rawServer) readRequest(br *bufio.Reader) bool {
	req, err := http.ReadRequest(br)
	if err != nil {
		return false
	}
	_ = req.Body.Close()
	s.reqs.Add(1)
	return true
}

// once answers each request on a connection with the raw bytes of answer.
func once(answer string) func(s *rawServer, c net.Conn, br *bufio.Reader) {
	return func(s *rawServer, c net.Conn, br *bufio.Reader) {
		if s.readRequest(br) {
			_, _ = io.WriteString(c, answer)
		}
	}
}

func TestSameAnswers(t *testing.T) {
	gz := func(s string) string {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		_, _ = io.WriteString(w, s)
		_ = w.Close()
		return b.String()
	}
	for _, tc := range []struct {
		name   string
		answer string
		hdr    http.Header
	}{
		{"content-length", "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"id\":\"p\"}\n", nil},
		{"chunked", "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"id\"\r\n6\r\n:\"p\"}\n\r\n0\r\n\r\n", nil},
		{"HTTP/1.0 to the close, with a length", "HTTP/1.0 200 OK\r\nContent-Length: 4\r\n\r\nabcd", nil},
		{"connection: close and a length", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 4\r\n\r\nabcd", nil},
		{"redirect returned as it is", "HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:1/elsewhere\r\nContent-Length: 0\r\n\r\n", nil},
		{"not modified", "HTTP/1.1 304 Not Modified\r\nEtag: \"x\"\r\n\r\n", nil},
		{"no content", "HTTP/1.1 204 No Content\r\n\r\n", nil},
		{"header names made canonical, repeated headers kept", "HTTP/1.1 200 OK\r\nx-request-id: r1\r\nX-MULTI: a\r\nx-multi: b\r\nretry-after: 3\r\nContent-Length: 2\r\n\r\n{}", nil},
		{"error answer", "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 19\r\n\r\n{\"error\":\"go away\"}", nil},
		{"no reason phrase", "HTTP/1.1 429 \r\nContent-Length: 0\r\n\r\n", nil},
		{"gzip decompressed", "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: " + fmt.Sprint(len(gz(`{"id":"p"}`))) + "\r\n\r\n" + gz(`{"id":"p"}`), nil},
		{"gzip the caller asked for itself: left alone", "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: " + fmt.Sprint(len(gz(`{"id":"p"}`))) + "\r\n\r\n" + gz(`{"id":"p"}`), http.Header{"Accept-Encoding": {"gzip"}}},
		{"truncated body", "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"id\":", nil},
		{"broken chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"id\"\r\n", nil},
		{"truncated gzip", "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 8\r\n\r\n" + gz(`{"id":"p"}`)[:8], nil},
		{"closed before any answer", "", nil},
		{"garbage instead of an answer", "SPDY/3 200 OK\r\n\r\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newRawServer(t, once(tc.answer))
			rts := transports(t, 0, nil)
			same(t, rts, func(rt http.RoundTripper) outcome {
				return roundTrip(context.Background(), rt, http.MethodGet, s.url()+"/api/v1/payments/p", tc.hdr)
			})
		})
	}
	t.Run("HTTP/1.0 to the close, no length", func(t *testing.T) {
		// net/http reports an unknown length (-1) and no Content-Length;
		// fasthttp has read the body whole and reports its length: the
		// one difference, which no caller of a REST API depends on.
		s := newRawServer(t, once("HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nto the end"))
		rts := transports(t, 0, nil)
		want := roundTrip(context.Background(), rts["net/http"], http.MethodGet, s.url()+"/", nil)
		got := roundTrip(context.Background(), rts["fasthttp"], http.MethodGet, s.url()+"/", nil)
		if got.Body != want.Body || got.Status != want.Status || got.ReadErr != want.ReadErr || got.Header.Get("Content-Type") != want.Header.Get("Content-Type") {
			t.Errorf("net/http: %+v\nfasthttp: %+v", want, got)
		}
		if got.ContentLength != int64(len("to the end")) || want.ContentLength != -1 {
			t.Errorf("content length: net/http %d, fasthttp %d", want.ContentLength, got.ContentLength)
		}
	})
}

// TestSameRequest: what the server reads of the request is the same:
// method, path as escaped, query, Host, User-Agent, Accept-Encoding, and
// every header the caller set (credentials, Accept, traceparent).
func TestSameRequest(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		var lines []string
		for k, v := range r.Header {
			lines = append(lines, k+": "+strings.Join(v, ","))
		}
		sort.Strings(lines)
		seen = append(seen, fmt.Sprintf("%s %s %s host=%s\n%s", r.Method, r.RequestURI, r.Proto, r.Host, strings.Join(lines, "\n")))
	}))
	t.Cleanup(srv.Close)
	hdr := http.Header{
		"X-Api-Key": {"ak_test_1"}, "X-Api-Secret": {"sk_test_1"}, "Accept": {"application/json"},
		"Traceparent": {"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
		"X-Twice":     {"a", "b"},
	}
	for _, tc := range []struct{ name, path string }{
		{"plain id", "/api/v1/payments/pay_prod_1"},
		{"escaped id", "/api/v1/payments/a%2Fb%20c%3Fd"},
		{"query", "/api/v1/payments?cursor=a%2Bb&limit=5&status=paid"},
		{"unicode id", "/api/v1/payments/%C3%A9t%C3%A9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen = nil
			rts := transports(t, 0, nil)
			for _, name := range []string{"net/http", "fasthttp"} {
				if o := roundTrip(context.Background(), rts[name], http.MethodGet, srv.URL+tc.path, hdr); o.Err != "" || o.Status != 200 {
					t.Fatalf("%s: %+v", name, o)
				}
			}
			if len(seen) != 2 || seen[0] != seen[1] {
				t.Errorf("requests differ:\nnet/http: %s\nfasthttp: %s", seen[0], seen[1])
			}
			if !strings.Contains(seen[1], "User-Agent: "+fasttransport.UserAgent) || !strings.Contains(seen[1], "Accept-Encoding: gzip") {
				t.Errorf("request: %s", seen[1])
			}
		})
	}
	t.Run("a Host other than the URL's", func(t *testing.T) {
		seen = nil
		rts := transports(t, 0, nil)
		for _, name := range []string{"net/http", "fasthttp"} {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+"/x", nil)
			req.Host = "rest.example.com"
			resp, err := rts[name].RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		if len(seen) != 2 || seen[0] != seen[1] || !strings.Contains(seen[0], "host=rest.example.com") {
			t.Errorf("requests:\n%s\n%s", seen[0], seen[1])
		}
	})
	t.Run("a body", func(t *testing.T) {
		var got [2]string
		i := 0
		echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			got[i] = r.Method + " " + string(b)
			i++
		}))
		t.Cleanup(echo.Close)
		rts := transports(t, 0, nil)
		for _, name := range []string{"net/http", "fasthttp"} {
			req, _ := http.NewRequest(http.MethodPost, echo.URL, strings.NewReader(`{"a":1}`))
			resp, err := rts[name].RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		if got[0] != got[1] || got[0] != `POST {"a":1}` {
			t.Errorf("bodies: %q %q", got[0], got[1])
		}
	})
}

// TestSameFailures: connection failures classify alike.
func TestSameFailures(t *testing.T) {
	t.Run("connection refused", func(t *testing.T) {
		ln, _ := net.Listen("tcp", "127.0.0.1:0")
		addr := ln.Addr().String()
		ln.Close()
		o := same(t, transports(t, 0, nil), func(rt http.RoundTripper) outcome {
			return roundTrip(context.Background(), rt, http.MethodGet, "http://"+addr+"/", nil)
		})
		if o.Err != "refused" {
			t.Errorf("got %+v", o)
		}
	})
	t.Run("host not resolved", func(t *testing.T) {
		o := same(t, transports(t, 0, nil), func(rt http.RoundTripper) outcome {
			return roundTrip(context.Background(), rt, http.MethodGet, "http://no-such-host.invalid/", nil)
		})
		if o.Err != "dns" {
			t.Errorf("got %+v", o)
		}
	})
	t.Run("reset before any answer", func(t *testing.T) {
		s := newRawServer(t, func(s *rawServer, c net.Conn, br *bufio.Reader) {
			if s.readRequest(br) {
				_ = c.(*net.TCPConn).SetLinger(0) // RST, not FIN
			}
		})
		o := same(t, transports(t, 0, nil), func(rt http.RoundTripper) outcome {
			return roundTrip(context.Background(), rt, http.MethodGet, s.url()+"/", nil)
		})
		if o.Err != "closed" {
			t.Errorf("got %+v", o)
		}
	})
	t.Run("TLS: unknown authority", func(t *testing.T) {
		srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		t.Cleanup(srv.Close)
		o := same(t, transports(t, 0, nil), func(rt http.RoundTripper) outcome {
			return roundTrip(context.Background(), rt, http.MethodGet, srv.URL+"/", nil)
		})
		if o.Err != "tls" {
			t.Errorf("got %+v", o)
		}
	})
	t.Run("TLS: not TLS at all", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		t.Cleanup(srv.Close)
		o := same(t, transports(t, 0, nil), func(rt http.RoundTripper) outcome {
			return roundTrip(context.Background(), rt, http.MethodGet, strings.Replace(srv.URL, "http:", "https:", 1)+"/", nil)
		})
		if o.Err != "tls" {
			t.Errorf("got %+v", o)
		}
	})
	t.Run("TLS with the server's roots", func(t *testing.T) {
		var sni atomic.Value
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			sni.Store(r.TLS.ServerName)
			_, _ = io.WriteString(w, r.Proto)
		}))
		srv.StartTLS()
		t.Cleanup(srv.Close)
		roots := srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
		rts := transports(t, 0, roots)
		// By address: verified against the certificate's IP (the host is
		// the name verified), and no SNI for an address.
		for _, name := range []string{"net/http", "fasthttp"} {
			o := roundTrip(context.Background(), rts[name], http.MethodGet, srv.URL+"/", nil)
			if o.Err != "" || o.Body != "HTTP/1.1" || sni.Load() != "" {
				t.Errorf("%s: %+v, SNI %q", name, o, sni.Load())
			}
		}
		// A server name set: sent as SNI and verified (the certificate
		// names example.com), alike.
		named := &tls.Config{RootCAs: roots, ServerName: "example.com", MinVersion: tls.VersionTLS12}
		std := &http.Transport{TLSClientConfig: named}
		fast := fasttransport.New(fasttransport.Config{TLSConfig: named})
		t.Cleanup(std.CloseIdleConnections)
		t.Cleanup(fast.CloseIdleConnections)
		for name, rt := range map[string]http.RoundTripper{"net/http": std, "fasthttp": fast} {
			sni.Store("")
			if o := roundTrip(context.Background(), rt, http.MethodGet, srv.URL+"/", nil); o.Err != "" || sni.Load() != "example.com" {
				t.Errorf("%s: %+v, SNI %q", name, o, sni.Load())
			}
		}
	})
}

// TestSameDeadlines: the context's deadline bounds the call, a done
// context makes none, the response-header timeout is a net.Error timeout.
func TestSameDeadlines(t *testing.T) {
	var calls atomic.Int64
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	t.Run("the context's deadline", func(t *testing.T) {
		o := same(t, transports(t, 0, nil), func(rt http.RoundTripper) outcome {
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			start := time.Now()
			o := roundTrip(ctx, rt, http.MethodGet, srv.URL, nil)
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("took %v", d)
			}
			return o
		})
		if o.Err != "context: context deadline exceeded" {
			t.Errorf("got %+v", o)
		}
	})
	t.Run("a context already done", func(t *testing.T) {
		calls.Store(0)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		o := same(t, transports(t, 0, nil), func(rt http.RoundTripper) outcome {
			return roundTrip(ctx, rt, http.MethodGet, srv.URL, nil)
		})
		if o.Err != "context: context canceled" || calls.Load() != 0 {
			t.Errorf("got %+v, %d calls", o, calls.Load())
		}
	})
	t.Run("the response-header timeout", func(t *testing.T) {
		o := same(t, transports(t, 100*time.Millisecond, nil), func(rt http.RoundTripper) outcome {
			return roundTrip(context.Background(), rt, http.MethodGet, srv.URL, nil)
		})
		if o.Err != "timeout" {
			t.Errorf("got %+v", o)
		}
	})
}

// TestSameRetries: a keep-alive connection the server closed while idle
// costs no failure and no extra request; a server that reads a request
// and closes without answering sees what it saw through net/http.
func TestSameRetries(t *testing.T) {
	t.Run("idle connection closed by the server", func(t *testing.T) {
		counts := map[string][2]int64{}
		for _, name := range []string{"net/http", "fasthttp"} {
			s := newRawServer(t, func(s *rawServer, c net.Conn, br *bufio.Reader) {
				// One answer, then the connection is closed after a while
				// without a word (a keep-alive timeout).
				if s.readRequest(br) {
					_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
					time.Sleep(50 * time.Millisecond)
				}
			})
			rt := transports(t, 0, nil)[name]
			for i := range 3 {
				if o := roundTrip(context.Background(), rt, http.MethodGet, s.url()+"/", nil); o.Err != "" || o.Body != "ok" {
					t.Fatalf("%s call %d: %+v", name, i, o)
				}
				time.Sleep(150 * time.Millisecond)
			}
			counts[name] = [2]int64{s.reqs.Load(), s.conns.Load()}
		}
		if counts["net/http"][0] != 3 || counts["fasthttp"][0] != 3 {
			t.Errorf("requests read (and connections): %v", counts)
		}
	})
	t.Run("requests read and never answered", func(t *testing.T) {
		counts := map[string]int64{}
		for _, name := range []string{"net/http", "fasthttp"} {
			var answer atomic.Bool
			answer.Store(true)
			s := newRawServer(t, func(s *rawServer, c net.Conn, br *bufio.Reader) {
				for s.readRequest(br) && answer.Load() {
					_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
				}
			})
			rt := transports(t, 0, nil)[name]
			if o := roundTrip(context.Background(), rt, http.MethodGet, s.url()+"/", nil); o.Err != "" {
				t.Fatalf("%s: %+v", name, o)
			}
			answer.Store(false)
			// On the kept connection: read, closed; once more on a new one.
			if o := roundTrip(context.Background(), rt, http.MethodGet, s.url()+"/", nil); o.Err != "closed" {
				t.Errorf("%s: %+v", name, o)
			}
			// On a new connection: read, closed, no retry.
			if o := roundTrip(context.Background(), rt, http.MethodGet, s.url()+"/", nil); o.Err != "closed" {
				t.Errorf("%s: %+v", name, o)
			}
			counts[name] = s.reqs.Load()
		}
		if counts["net/http"] != counts["fasthttp"] {
			t.Errorf("requests the server read: %v", counts)
		}
	})
}
