// Package fasttransport is an http.RoundTripper over valyala/fasthttp's client
// for each credential pair's REST pool (gateway/transport.go): the call runs
// on the caller's goroutine, not on two of its connection's as in net/http
// (docs/performance.md, "REST transport"). It keeps what net/http gave its
// callers, each tested against it (differential_test.go): the context's
// deadline, the response-header timeout, transparent gzip, no redirects, one
// retry on a reused keep-alive connection that failed before any answer byte,
// errors that errors.Is/As classify alike, canonical response headers. No
// HTTP/2, proxies, or cancelling a call whose context has no deadline. It uses
// fasthttp's public API only (verified against v1.78.0: on an upgrade run its
// tests and gateway's TestRESTFaultsNeverCrossPairs) and imports no paygraph
// package.
package fasttransport

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// Config's defaults, those of the net/http transport it replaces.
const (
	DefaultDialTimeout      = 5 * time.Second
	DefaultKeepAlive        = 30 * time.Second
	DefaultIdleConnTimeout  = 90 * time.Second
	DefaultTLSHandshake     = 5 * time.Second
	DefaultMaxConnsPerHost  = 512
	DefaultMaxResponseBytes = 4 << 20
	DefaultReadBufferSize   = 16 << 10             // the read buffer, which bounds a response's header block
	UserAgent               = "Go-http-client/1.1" // net/http's, sent when the request sets none
)

// Config configures a Transport; every zero field takes its default.
type Config struct {
	// MaxConnsPerHost bounds the connections to one host; a call finding them
	// all busy waits (to its deadline, else ResponseHeaderTimeout or 30 s),
	// never fails for want of one.
	MaxConnsPerHost int
	// ResponseHeaderTimeout bounds the wait for the answer, body included; 0:
	// the deadline only.
	ResponseHeaderTimeout time.Duration
	// TLSConfig is cloned for each TLS connection, ServerName defaulting to
	// the host; nil: system roots.
	TLSConfig *tls.Config
	// MaxResponseBytes bounds an answer's body held in memory (0: the
	// default). A larger one comes with its status and headers, no body and a
	// ContentLength past it: a caller with no larger limit refuses it.
	MaxResponseBytes int
	// MaxResponseBytesFor, if set, is a call's MaxResponseBytes (0: the
	// above), one pool a value.
	MaxResponseBytesFor func(*http.Request) int
	// WrapConn, if set, wraps each connection dialled (before TLS), for
	// counting; its Close is theirs.
	WrapConn func(net.Conn) net.Conn
}

// Transport is a RoundTripper over fasthttp's HostClients, a pool a host and
// limit; safe for concurrent use.
type Transport struct {
	maxBody  int
	limitFor func(*http.Request) int
	newHost  func(addr string, isTLS bool, maxBody int) *fasthttp.HostClient
	dialer   dialer
	clients  atomic.Pointer[[]limited] // copied on write
	mu       sync.Mutex
}

type limited struct {
	host    string // as in the request's URL
	isTLS   bool
	maxBody int
	c       *fasthttp.HostClient
}

// New returns a Transport for cfg.
func New(cfg Config) *Transport {
	t := &Transport{maxBody: positiveOr(cfg.MaxResponseBytes, DefaultMaxResponseBytes),
		limitFor: cfg.MaxResponseBytesFor, dialer: dialer{tls: cfg.TLSConfig, wrap: cfg.WrapConn}}
	t.clients.Store(&[]limited{})
	t.newHost = func(addr string, isTLS bool, maxBody int) *fasthttp.HostClient {
		return &fasthttp.HostClient{
			Addr:                      addr,
			IsTLS:                     isTLS,
			Name:                      UserAgent,
			MaxConns:                  positiveOr(cfg.MaxConnsPerHost, DefaultMaxConnsPerHost),
			MaxConnWaitTimeout:        positiveOr(cfg.ResponseHeaderTimeout, 30*time.Second),
			MaxIdleConnDuration:       DefaultIdleConnTimeout,
			ReadTimeout:               cfg.ResponseHeaderTimeout,
			ReadBufferSize:            DefaultReadBufferSize,
			MaxResponseBodySize:       maxBody,
			DisablePathNormalizing:    true, // sent as the caller escaped it (an id's %2F stays one segment)
			MaxIdemponentCallAttempts: 1,    // RoundTrip retries; fasthttp would, on any error, up to five times
			RetryIfErr:                func(*fasthttp.Request, int, error) (bool, bool) { return false, false },
			DialTimeout:               t.dialer.dialFunc(isTLS), // TLS is shaken hands there
		}
	}
	return t
}

func positiveOr[T int | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

// clientFor is host's client that holds answers to maxBody bytes.
func (t *Transport) clientFor(host string, isTLS bool, maxBody int) *fasthttp.HostClient {
	find := func() *fasthttp.HostClient {
		for _, l := range *t.clients.Load() {
			if l.host == host && l.isTLS == isTLS && l.maxBody == maxBody {
				return l.c
			}
		}
		return nil
	}
	if c := find(); c != nil {
		return c
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if c := find(); c != nil {
		return c
	}
	c := t.newHost(fasthttp.AddMissingPort(host, isTLS), isTLS, maxBody)
	all := append(slices.Clone(*t.clients.Load()), limited{host, isTLS, maxBody, c})
	t.clients.Store(&all)
	return c
}

// CloseIdleConnections closes the idle keep-alive connections.
func (t *Transport) CloseIdleConnections() {
	for _, l := range *t.clients.Load() {
		l.c.CloseIdleConnections()
	}
}

// call is what one RoundTrip borrows until the response's body is closed.
type call struct {
	fc      *fasthttp.HostClient
	maxBody int
	req     fasthttp.Request
	resp    fasthttp.Response
	uri     []byte
	hdr     []byte // the response's header names and values, back to back
	ends    []int  // where each of them ends in hdr
}

var calls = sync.Pool{New: func() any { return new(call) }}

func (c *call) release() {
	c.req.Reset()
	c.resp.Reset()
	c.uri, c.hdr, c.ends = c.uri[:0], c.hdr[:0], c.ends[:0]
	c.fc = nil
	calls.Put(c)
}

// RoundTrip sends r and returns its answer as net/http's transport would.
func (t *Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx := r.Context()
	var err error
	switch {
	case r.URL == nil:
		err = errors.New("fasttransport: nil Request.URL")
	case r.URL.Scheme != "http" && r.URL.Scheme != "https":
		err = errors.New("fasttransport: unsupported protocol scheme " + r.URL.Scheme)
	case r.URL.Host == "":
		err = errors.New("fasttransport: no Host in request URL")
	default:
		err = ctx.Err() // a call already given up: none made
	}
	if err != nil {
		closeBody(r)
		return nil, err
	}
	c := calls.Get().(*call)
	c.maxBody = t.maxBody
	if t.limitFor != nil {
		c.maxBody = positiveOr(t.limitFor(r), t.maxBody)
	}
	c.fc = t.clientFor(r.URL.Host, r.URL.Scheme == "https", c.maxBody)
	gz := c.build(r)
	deadline, hasDeadline := ctx.Deadline()
	err = t.do(c, deadline, hasDeadline)
	if err != nil && !c.req.IsBodyStream() && failedOnIdle(&c.resp) { // once more, as net/http
		err = t.do(c, deadline, hasDeadline)
	}
	closeBody(r)
	if err != nil {
		return t.failed(ctx, r, c, err, gz, deadline, hasDeadline)
	}
	return t.response(r, c, gz, nil), nil
}

func (t *Transport) do(c *call, deadline time.Time, hasDeadline bool) error {
	c.resp.Header.SetNoDefaultContentType(true)
	if hasDeadline {
		return c.fc.DoDeadline(&c.req, &c.resp, deadline)
	}
	return c.fc.Do(&c.req, &c.resp)
}

// build makes c's request from r; gz: it asked for gzip for the caller.
func (c *call) build(r *http.Request) (gz bool) {
	u := r.URL
	c.uri = append(c.uri[:0], u.Scheme...)
	c.uri = append(c.uri, "://"...)
	c.uri = append(c.uri, u.Host...)
	c.uri = append(c.uri, u.EscapedPath()...)
	if len(c.uri) == len(u.Scheme)+3+len(u.Host) {
		c.uri = append(c.uri, '/')
	}
	if u.ForceQuery || u.RawQuery != "" {
		c.uri = append(c.uri, '?')
		c.uri = append(c.uri, u.RawQuery...)
	}
	req := &c.req
	req.SetRequestURIBytes(c.uri)
	req.Header.SetMethod(cmp.Or(r.Method, http.MethodGet))
	if r.Host != "" && r.Host != u.Host {
		req.UseHostHeader = true
		req.Header.SetHost(r.Host)
	}
	for k, vs := range r.Header {
		switch k {
		case "Host", "Content-Length", "Transfer-Encoding", "Trailer":
			continue // as net/http: from the request's fields, not its header
		}
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if r.Close {
		req.SetConnectionClose()
	}
	if r.Body != nil && r.Body != http.NoBody {
		req.SetBodyStream(r.Body, int(r.ContentLength))
	}
	if r.Header["Accept-Encoding"] == nil && r.Header["Range"] == nil && r.Method != http.MethodHead {
		req.Header.Set("Accept-Encoding", "gzip")
		return true
	}
	return false
}

func closeBody(r *http.Request) {
	if r.Body != nil {
		_ = r.Body.Close()
	}
}

// failed answers a call fasthttp ended with err: an error, or with the headers
// come a body failing.
func (t *Transport) failed(ctx context.Context, r *http.Request, c *call, err error, gz bool, deadline time.Time, hasDeadline bool) (*http.Response, error) {
	// A failed header read clears them: a Content-Length not 0 (-1 chunked, -2
	// to close) means they came.
	headers := c.resp.Header.ContentLength() != 0
	if errors.Is(err, fasthttp.ErrTimeout) && !headers {
		c.release()
		if hasDeadline && !time.Now().Before(deadline) {
			timer := time.NewTimer(100 * time.Millisecond) // the context's deadline: its error, once ctx says it
			defer timer.Stop()
			select {
			case <-ctx.Done():
				return nil, &url.Error{Op: r.Method, URL: r.URL.Redacted(), Err: ctx.Err()}
			case <-timer.C:
			}
			return nil, context.DeadlineExceeded
		}
		return nil, errHeaderTimeout
	}
	if headers {
		switch {
		case errors.Is(err, fasthttp.ErrBodyTooLarge):
			return t.response(r, c, false, errTooLarge), nil
		case errors.Is(err, fasthttp.ErrTimeout):
			return t.response(r, c, gz, errBodyTimeout), nil
		}
		return t.response(r, c, gz, bodyError(err)), nil
	}
	c.release()
	return nil, mapError(err)
}

// Timeouts awaiting the headers or the body, net.Errors as net/http's, and a
// body past MaxResponseBytes (response.go).
var (
	errHeaderTimeout error = timeoutError{"fasttransport: timeout awaiting response headers"}
	errBodyTimeout   error = timeoutError{"fasttransport: timeout reading the response body"}
	errTooLarge            = errors.New("fasttransport: response body larger than MaxResponseBytes")
)

type timeoutError struct{ msg string }

func (e timeoutError) Error() string   { return e.msg }
func (e timeoutError) Timeout() bool   { return true }
func (e timeoutError) Temporary() bool { return true }

// mapError makes a connection closed before any answer byte io.EOF to
// errors.Is, as net/http's.
func mapError(err error) error {
	if errors.Is(err, fasthttp.ErrConnectionClosed) {
		return alsoIs{err, io.EOF}
	}
	return err
}

// alsoIs is err, which errors.Is also takes for is.
type alsoIs struct{ err, is error }

func (e alsoIs) Error() string   { return e.err.Error() }
func (e alsoIs) Unwrap() []error { return []error{e.err, e.is} }

// bodyError ends a body read: a broken chunk is io.ErrUnexpectedEOF, as
// net/http's.
func bodyError(err error) error {
	var bc fasthttp.ErrBrokenChunk
	if errors.As(err, &bc) {
		return alsoIs{err, io.ErrUnexpectedEOF}
	}
	return mapError(err)
}
