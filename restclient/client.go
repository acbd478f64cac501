package restclient

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"
)

// Endpoint names a REST route pattern (for metrics and logs), never an id.
type Endpoint string

// The four REST routes.
const (
	EndpointListPayments       Endpoint = "/api/v1/payments"
	EndpointGetPayment         Endpoint = "/api/v1/payments/{id}"
	EndpointGetPaymentLink     Endpoint = "/api/v1/payment-links/{id}"
	EndpointGetCheckoutSession Endpoint = "/api/v1/checkout/sessions/{id}"
)

// idRoutes are the routes that end in one id segment.
var idRoutes = [...]Endpoint{EndpointGetPayment, EndpointGetPaymentLink, EndpointGetCheckoutSession}

// EndpointOf names u's REST call by its route pattern, any base path aside; ""
// for no route.
func EndpointOf(u *url.URL) Endpoint {
	if u == nil {
		return ""
	}
	p := u.Path
	if u.RawPath != "" {
		p = u.EscapedPath() // an escaped id holds no '/'
	}
	p = strings.TrimSuffix(p, "/")
	if strings.HasSuffix(p, string(EndpointListPayments)) {
		return EndpointListPayments
	}
	j := strings.LastIndexByte(p, '/')
	if j < 0 || j == len(p)-1 {
		return ""
	}
	route := p[:j+1] // the id, p[j+1:], is not empty and holds no '/'
	for _, ep := range idRoutes {
		if strings.HasSuffix(route, strings.TrimSuffix(string(ep), "{id}")) {
			return ep
		}
	}
	return ""
}

// Limits.
const (
	MaxIDLength         = 256              // the longest id (in bytes) sent to the REST API
	DefaultMaxBodyBytes = 64 << 10         // Config.MaxBodyBytes's default (a session's meta_data is free-form)
	DefaultMaxPageBytes = 1 << 20          // Config.MaxPageBytes's default
	DefaultTimeout      = 10 * time.Second // the per-call timeout when Config.Timeout is 0
	maxErrorBodyBytes   = 64 << 10         // how much of an error response body is read
	maxDrainBytes       = 256 << 10        // how much unread body is drained to reuse the connection
	maxPooledBuffer     = 256 << 10        // the largest body buffer kept for reuse
)

// Config configures a Client.
type Config struct {
	BaseURL     string        // {base_url}, e.g. "http://127.0.0.1:9000"; a trailing slash or a path prefix works
	HTTPClient  *http.Client  // nil -> a default client (pooled keep-alive connections, no redirects)
	StatusParam string        // name of the list status-filter query parameter; "" -> "status"
	Timeout     time.Duration // per-call timeout; 0 -> 10s
	// MaxBodyBytes and MaxPageBytes bound a record's and a page's 2xx body (0:
	// default; over: KindUpstream).
	MaxBodyBytes int64
	MaxPageBytes int64
	Limiter      *Limiter // bounds the calls in flight; nil: one with the default bounds
	// DropIdle closes the idle connections ctx's pair may reuse, after an
	// answer of another record than asked (out of step) and before a retry
	// after a connection error; nil: CloseIdleConnections.
	DropIdle     func(ctx context.Context)
	ShareWaiters int // callers that may wait for a pair's GET in flight (share.go); 0: the default, <0: none
	Resilience
}

// Client is the REST API's typed client, safe for concurrent use; credentials
// come from the context.
type Client struct {
	hc          *http.Client
	scheme      string
	host        string
	user        *url.Userinfo
	basePath    string // decoded base path, no trailing slash
	baseRawPath string // escaped base path, no trailing slash
	statusParam string
	timeout     time.Duration
	timeoutMsg  string
	rt          http.RoundTripper // when set, hc's transport, called directly: Do would add nothing
	maxBody     int64             // of a single record
	maxPage     int64             // of a list page
	dropIdle    func(ctx context.Context)
	retry       retryPolicy
	breaker     *breaker
	limiter     *Limiter
	flights     *flights // nil: no sharing
}

// New returns a Client for cfg; BaseURL is an absolute http(s) URL without
// query or fragment.
func New(cfg Config) (*Client, error) {
	if strings.TrimSpace(cfg.BaseURL) == "" {
		return nil, errors.New("restclient: BaseURL is empty; want an absolute http(s) URL such as http://127.0.0.1:9000")
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("restclient: BaseURL %q is not a valid URL: %w", cfg.BaseURL, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("restclient: BaseURL %q must be an absolute http or https URL (got scheme %q)", u.Redacted(), u.Scheme)
	}
	if u.Host == "" || u.Opaque != "" {
		return nil, fmt.Errorf("restclient: BaseURL %q has no host; want e.g. http://127.0.0.1:9000", u.Redacted())
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return nil, fmt.Errorf("restclient: BaseURL %q must not have a query or fragment", u.Redacted())
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("restclient: Timeout %v is negative", cfg.Timeout)
	}
	if cfg.MaxBodyBytes < 0 || cfg.MaxPageBytes < 0 {
		return nil, errors.New("restclient: MaxBodyBytes and MaxPageBytes must not be negative")
	}
	c := &Client{
		scheme:      u.Scheme,
		host:        u.Host,
		user:        u.User,
		basePath:    strings.TrimRight(u.Path, "/"),
		baseRawPath: strings.TrimRight(u.EscapedPath(), "/"),
		statusParam: cmp.Or(cfg.StatusParam, "status"),
		timeout:     cmp.Or(cfg.Timeout, DefaultTimeout),
		maxBody:     cmp.Or(cfg.MaxBodyBytes, DefaultMaxBodyBytes),
		maxPage:     cmp.Or(cfg.MaxPageBytes, DefaultMaxPageBytes),
		limiter:     cfg.Limiter,
		flights:     newFlights(cmp.Or(cfg.ShareWaiters, DefaultShareWaiters)),
		retry:       cfg.Resilience.retryPolicy(),
		breaker:     cfg.Resilience.newBreaker(u.Host),
		dropIdle:    cfg.DropIdle,
	}
	c.timeoutMsg = "REST API did not answer within " + c.timeout.String()
	if c.limiter == nil {
		c.limiter = NewLimiter(LimiterConfig{})
	}
	if cfg.HTTPClient != nil {
		hc := *cfg.HTTPClient
		if hc.CheckRedirect == nil {
			hc.CheckRedirect = noRedirects
		}
		c.hc = &hc
	} else {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConns = 256
		t.MaxIdleConnsPerHost = 64
		c.hc = &http.Client{Transport: t, CheckRedirect: noRedirects}
	}
	if c.hc.Jar == nil && c.hc.Timeout == 0 && c.user == nil &&
		(cfg.HTTPClient == nil || cfg.HTTPClient.CheckRedirect == nil) {
		c.rt = cmp.Or[http.RoundTripper](c.hc.Transport, http.DefaultTransport)
	}
	if c.dropIdle == nil {
		c.dropIdle = func(context.Context) { c.hc.CloseIdleConnections() }
	}
	return c, nil
}

// noRedirects stops redirects, which would carry the credential headers.
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// ListPayments lists one page of payments.
func (c *Client) ListPayments(ctx context.Context, p ListParams) (*PaymentPage, error) {
	if p.Limit < 0 {
		return nil, &Error{Kind: KindBadRequest, Endpoint: EndpointListPayments, Message: "limit must not be negative"}
	}
	var q url.Values
	if p.Limit != 0 || p.Cursor != "" || p.Status != "" {
		q = make(url.Values, 3)
		if p.Limit != 0 {
			q["limit"] = []string{strconv.Itoa(p.Limit)}
		}
		if p.Cursor != "" {
			q["cursor"] = []string{p.Cursor}
		}
		if p.Status != "" {
			q[c.statusParam] = []string{string(p.Status)}
		}
	}
	return get(ctx, c, EndpointListPayments, "", q, new(wirePage), (*wirePage).toPage,
		func(page *PaymentPage) error { return page.answers(p) })
}

// GetPayment retrieves one payment (Detailed is true).
func (c *Client) GetPayment(ctx context.Context, id string) (*Payment, error) {
	b := new(paymentBox)
	b.w.strings = &b.strings
	return get(ctx, c, EndpointGetPayment, id, nil, &b.w,
		func(w *wirePayment) (*Payment, error) { return &b.p, w.to(&b.p, true) },
		func(p *Payment) error { return sameID("payment", id, p.ID) })
}

// paymentBox is a payment and its wire struct in one allocation.
type paymentBox struct {
	p       Payment
	w       wirePayment
	strings [firstStringBlock]string // the payment's nullable strings (wirefast.go)
}

// GetPaymentLink retrieves one payment link.
func (c *Client) GetPaymentLink(ctx context.Context, id string) (*PaymentLink, error) {
	return get(ctx, c, EndpointGetPaymentLink, id, nil, new(wireLink), (*wireLink).toLink,
		func(l *PaymentLink) error { return sameID("payment link", id, l.ID) })
}

// GetCheckoutSession retrieves one checkout session by its id or payment reference.
func (c *Client) GetCheckoutSession(ctx context.Context, idOrRef string) (*CheckoutSession, error) {
	return get(ctx, c, EndpointGetCheckoutSession, idOrRef, nil, new(wireSessionEnvelope),
		(*wireSessionEnvelope).toSession, func(s *CheckoutSession) error { return s.answers(idOrRef) })
}

// get is do's call into w and conv's record of w once check accepts it; another
// record may be an earlier call's answer, so the pair's idle connections close.
func get[W errorCarrier, V any](ctx context.Context, c *Client, ep Endpoint, id string, q url.Values, w W,
	conv func(W) (V, error), check func(V) error) (V, error) {
	var none V
	if err := c.do(ctx, ep, id, q, w); err != nil {
		return none, err
	}
	v, err := conv(w)
	if err != nil {
		return none, unexpected(ep, err)
	}
	if err := check(v); err != nil {
		c.dropIdle(ctx)
		return none, unexpected(ep, err)
	}
	return v, nil
}

// errorCarrier reports a 2xx body's string "error" key when it has no id/data.
type errorCarrier interface{ errorBody() (string, bool) }

// checkID reports why id cannot be a path segment (or ""), and whether it is
// RFC 3986 unreserved.
func checkID(id string) (why string, plain bool) {
	switch {
	case id == "":
		return "id is empty", false
	case id == "." || id == "..":
		return "id must not be . or ..", false
	case len(id) > MaxIDLength:
		return "id is longer than " + strconv.Itoa(MaxIDLength) + " bytes", false
	}
	all := uint8(1)
	for i := 0; i < len(id); i++ {
		all &= idUnreserved[id[i]]
	}
	if all != 0 {
		return "", true
	}
	if strings.ContainsFunc(id, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "id contains a control character", false
	}
	if !utf8.ValidString(id) {
		return "id is not valid UTF-8", false
	}
	return "", false
}

// idUnreserved is 1 at RFC 3986's unreserved characters, for checkID.
var idUnreserved = func() (t [256]uint8) {
	for _, r := range "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~" {
		t[r] = 1
	}
	return t
}()

// do GETs ep's route (with id) and query into into, holding one slot across retries.
func (c *Client) do(ctx context.Context, ep Endpoint, id string, query url.Values, into errorCarrier) error {
	creds, ok := credentialsFrom(ctx)
	if !ok {
		return &Error{Kind: KindUnauthorized, Endpoint: ep, Message: "missing x-api-key or x-api-secret header"}
	}
	route, esc := strings.TrimSuffix(string(ep), "{id}"), id // an id route ends in "/"
	if ep != EndpointListPayments {
		why, plain := checkID(id)
		if why != "" {
			return &Error{Kind: KindInvalidID, Endpoint: ep, Message: why}
		}
		if !plain {
			esc = url.PathEscape(id)
		}
	}
	u := &url.URL{Scheme: c.scheme, Host: c.host, User: c.user, Path: c.basePath + route + id}
	if esc != id || c.baseRawPath != c.basePath {
		u.RawPath = c.baseRawPath + route + esc
	}
	if query != nil {
		u.RawQuery = query.Encode()
	}

	if c.flights != nil && c.limiter.gate.acceptedHere(creds) { // only an accepted pair's calls share
		k := flightKey{merchant: creds.merchant, ep: ep, id: id, query: u.RawQuery}
		return c.shared(ctx, k, ep, u, creds, into, true)
	}
	s, err := c.limiter.slotFor(ctx, creds)
	if err != nil {
		return acquireError(ctx, ep, err)
	}
	defer s.release()
	return c.call(ctx, ep, id, u, creds, into, nil)
}

// call is do's call once its slot is held; f, if not nil, is the shared call it makes.
func (c *Client) call(ctx context.Context, ep Endpoint, id string, u *url.URL, creds *credentialsValue, into errorCarrier, f *flight) error {
	log := callLogFrom(ctx)
	var start time.Time
	if log != nil || c.breaker != nil {
		start = time.Now()
	}
	var st callStat
	var stat *callStat // the attempts' record, when logged
	if log != nil {
		stat = &st
	}
	err := c.withResilience(ctx, creds, ep, start, func() error { return c.attempt(ctx, ep, u, creds, into, stat, f) })
	if log != nil {
		log.add(&CallRecord{Endpoint: ep, ID: id, Status: st.status, Duration: time.Since(start), Bytes: st.bytes}, st.attempts)
	}
	c.limiter.gate.report(ctx, creds, err) // before the release wakes the pair's waiters
	return err
}

// attempt makes one request into into; st (if set) records it, f (if set)
// keeps a 2xx body.
func (c *Client) attempt(ctx context.Context, ep Endpoint, u *url.URL, cv *credentialsValue, into errorCarrier, st *callStat, f *flight) error {
	if err := ctx.Err(); err != nil { // a dead parent must not count as our timeout
		return ctxError(ctx, ep, err)
	}
	callCtx := ctx // the caller's deadline, or the per-call timeout if sooner
	if d, ok := ctx.Deadline(); !ok || time.Until(d) > c.timeout {
		var cancel context.CancelFunc
		callCtx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}

	req := getTemplate.WithContext(callCtx)
	req.URL = u
	req.Host = u.Host
	req.Header = cv.requestHeader()
	if c.rt == nil {
		req.Header = req.Header.Clone() // Do may write to it (a cookie jar)
	}

	if st != nil {
		st.attempts++
		st.status, st.bytes = 0, 0
	}
	resp, err := c.roundTrip(req)
	if err != nil {
		return c.transportError(ctx, callCtx, ep, err)
	}
	limit, what := c.maxBody, "one record"
	if ep == EndpointListPayments {
		limit, what = c.maxPage, "a list page"
	}
	lr := limitedReader{r: resp.Body, n: limit}
	if st != nil {
		st.status = resp.StatusCode
		defer func() { st.bytes = limit - lr.n }()
	}
	defer func() {
		if !lr.eof && !lr.exceeded { // drained (bounded) for the connection's reuse; not past the limit
			_, _ = io.CopyN(io.Discard, resp.Body, maxDrainBytes)
		}
		_ = resp.Body.Close()
	}()

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return statusError(ep, resp, cv.c)
	}

	if resp.ContentLength > limit { // refused before reading it
		lr.exceeded = true
	} else if err = decodeBody(&lr, into, resp.ContentLength, f); err == nil {
		if msg, isErr := into.errorBody(); isErr {
			msg = cmp.Or(cv.c.scrub(msg), "REST API answered an error without a message")
			return &Error{Kind: notFoundOr(msg, KindUpstream), Endpoint: ep, Status: resp.StatusCode, Message: msg}
		}
		return nil
	}
	switch {
	case lr.exceeded:
		return &Error{Kind: KindUpstream, Endpoint: ep, Status: resp.StatusCode,
			Message: "REST API answered something unexpected: a body larger than the limit of " +
				strconv.FormatInt(limit, 10) + " bytes for " + what}
	case lr.err != nil: // the connection failed, not the JSON
		return c.bodyError(ctx, callCtx, ep, resp.ContentLength, limit-lr.n, lr.err)
	}
	e := unexpected(ep, describeDecodeError(err))
	e.Status = resp.StatusCode
	return e
}

// roundTrip is c.hc.Do, by c.rt itself when Do would add nothing, with Do's
// checks and *url.Error.
func (c *Client) roundTrip(req *http.Request) (*http.Response, error) {
	if c.rt == nil {
		return c.hc.Do(req)
	}
	resp, err := c.rt.RoundTrip(req)
	switch {
	case err != nil:
		if resp != nil && resp.Body != nil {
			_ = resp.Body.Close()
		}
	case resp == nil:
		err = fmt.Errorf("http: RoundTripper implementation (%T) returned a nil *Response with a nil error", c.rt)
	case resp.Body == nil:
		if resp.ContentLength > 0 {
			err = fmt.Errorf("http: RoundTripper implementation (%T) returned a *Response with content length %d but a nil Body", c.rt, resp.ContentLength)
			break
		}
		resp.Body = http.NoBody
	}
	if err != nil {
		return nil, &url.Error{Op: "Get", URL: req.URL.Redacted(), Err: err}
	}
	return resp, nil
}

var (
	// getTemplate is what every REST request is copied from (read only).
	getTemplate        = &http.Request{Method: http.MethodGet, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
	acceptJSON         = []string{"application/json"}          // the Accept header value of every REST call
	canonicalAPIKey    = http.CanonicalHeaderKey(HeaderAPIKey) // the credential headers' canonical keys
	canonicalAPISecret = http.CanonicalHeaderKey(HeaderAPISecret)
	bodyBuffers        = sync.Pool{New: func() any { return new([]byte) }} // of REST bodies (values copy)
	errBodyTooLarge    = errors.New("restclient: response body too large") // limitedReader's
)

// decodeBody decodes lr's first JSON value into into as a json.Decoder would,
// from a pooled buffer (wirefast.go if it can); size is the Content-Length or
// -1; f, if set, is told the bytes decoded.
func decodeBody(lr *limitedReader, into any, size int64, f *flight) error {
	pooled := bodyBuffers.Get().(*[]byte)
	buf, spare, readErr := readBody(lr, (*pooled)[:0], size)
	defer func() {
		switch {
		case cap(buf) <= maxPooledBuffer:
			*pooled = buf[:0]
		case spare != nil: // the largest buffer the pool may keep
			*pooled = spare[:0]
		} // else the pool gets back the buffer it gave
		bodyBuffers.Put(pooled)
	}()
	if readErr == errBodyTooLarge {
		return readErr
	}
	err := decodeBuf(buf, into, readErr)
	if err == nil && f != nil {
		f.fs.keep(f, buf)
	}
	return err
}

// decodeBuf decodes buf, the bytes read before readErr.
func decodeBuf(buf []byte, into any, readErr error) error {
	if readErr == nil {
		if f, ok := into.(fastDecoder); ok && f.decodeFast(buf) {
			return nil
		}
		err := json.Unmarshal(buf, into)
		if _, ok := errors.AsType[*json.SyntaxError](err); !ok {
			return err // nil, or a type error, as the Decoder reports it
		}
	}
	var rest io.Reader = bytes.NewReader(buf)
	if readErr != nil {
		rest = io.MultiReader(rest, errReader{readErr})
	}
	dec := json.NewDecoder(rest)
	dec.UseNumber()
	return dec.Decode(into)
}

// readBody reads lr into buf, never past lr's limit; spare: an outgrown buffer
// the pool may keep.
func readBody(lr *limitedReader, buf []byte, size int64) (_, spare []byte, _ error) {
	switch {
	case size >= int64(cap(buf)) && size < lr.n:
		buf = make([]byte, 0, size+1) // one byte more than the body: its end reads as io.EOF
	case size > int64(cap(buf)) && size == lr.n:
		buf = make([]byte, 0, size) // never past the limit
	}
	for {
		var k int
		var err error
		if len(buf) < cap(buf) {
			k, err = lr.Read(buf[len(buf):cap(buf)])
			buf = buf[:len(buf)+k]
		} else { // full: one byte tells whether more is coming
			probe := make([]byte, 1) // not in lr: see limitedReader
			if k, err = lr.Read(probe); k == 1 {
				grown := make([]byte, len(buf), min(max(4*cap(buf), 4<<10), len(buf)+1+int(lr.n)))
				copy(grown, buf)
				if cap(buf) <= maxPooledBuffer && cap(grown) > maxPooledBuffer {
					spare = buf
				}
				buf = append(grown, probe[0])
			}
		}
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return buf, spare, err
		}
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// ctxError maps a context error of the caller's context.
func ctxError(parent context.Context, ep Endpoint, err error) *Error {
	if errors.Is(parent.Err(), context.DeadlineExceeded) {
		return &Error{Kind: KindTimeout, Endpoint: ep, Message: "REST API did not answer before the caller's deadline", Err: err}
	}
	return &Error{Kind: KindCanceled, Endpoint: ep, Message: "request canceled by the caller", Err: err}
}

// transportError maps a failure to get or read a response.
func (c *Client) transportError(parent, callCtx context.Context, ep Endpoint, err error) *Error {
	if parent.Err() != nil {
		return ctxError(parent, ep, err)
	}
	if errors.Is(callCtx.Err(), context.DeadlineExceeded) {
		return &Error{Kind: KindTimeout, Endpoint: ep, Message: c.timeoutMsg, Err: err}
	}
	if isTimeout(err) { // e.g. http.Client.Timeout
		return &Error{Kind: KindTimeout, Endpoint: ep, Message: "REST API did not answer in time", Err: err}
	}
	// Callers see the message: never the net error's internal address.
	return &Error{Kind: KindUpstream, Endpoint: ep, Message: "REST API unreachable: " + connFailure(err), Err: err}
}

// bodyError maps a failed read of a 2xx body of size bytes (-1: unknown):
// upstream unless ctx ended.
func (c *Client) bodyError(parent, callCtx context.Context, ep Endpoint, size, read int64, err error) *Error {
	if parent.Err() != nil {
		return ctxError(parent, ep, err)
	}
	msg := "REST API connection failed while reading the answer: " + connFailure(err)
	if callCtx.Err() != nil || isTimeout(err) {
		msg = "REST API answered a body that stopped short"
		if size >= 0 {
			msg += " (" + strconv.FormatInt(read, 10) + " of its " + strconv.FormatInt(size, 10) + " bytes)"
		}
		msg += " within " + c.timeout.String()
		err = errCutShort{err}
	}
	return &Error{Kind: KindUpstream, Endpoint: ep, Message: msg, Err: err}
}

// errCutShort is a body read that the call's deadline cut: not retried.
type errCutShort struct{ error }

func (e errCutShort) Unwrap() error { return e.error }

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// connFailure describes a connection failure without addresses or names.
func connFailure(err error) string {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case isA[*net.DNSError](err):
		return "host name not resolved"
	case isA[*tls.CertificateVerificationError](err), isA[tls.RecordHeaderError](err):
		return "TLS handshake failed"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed by the REST API"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "host unreachable"
	}
	return "connection failed"
}

// statusError maps a non-2xx response.
func statusError(ep Endpoint, resp *http.Response, creds Credentials) *Error {
	code := resp.StatusCode
	e := &Error{Kind: KindUpstream, Endpoint: ep, Status: code} // 5xx, 1xx and 3xx
	body, readErr := io.ReadAll(io.LimitReader(resp.Body, maxErrorBodyBytes))
	var eb struct {
		Error errField `json:"error"`
	}
	if readErr == nil && json.Unmarshal(body, &eb) == nil && eb.Error.set && eb.Error.msg != "" {
		e.Message = creds.scrub(eb.Error.msg)
	} else {
		e.Message = strings.TrimSpace("REST API answered " + strconv.Itoa(code) + " " + http.StatusText(code))
	}
	switch {
	case code == http.StatusUnauthorized:
		e.Kind = KindUnauthorized
	case code == http.StatusForbidden:
		e.Kind = KindForbidden
	case code == http.StatusNotFound:
		e.Kind = KindNotFound
	case code == http.StatusTooManyRequests:
		e.Kind = KindRateLimited
		e.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	case code == http.StatusRequestTimeout || code == http.StatusGatewayTimeout:
		e.Kind = KindTimeout
	case code >= 400 && code < 500: // 400, 422 and the others
		e.Kind = KindBadRequest
	case code >= 300 && code < 400: // a redirect is not followed (it would carry the credentials)
		e.Message = "REST API answered an unexpected redirect (" + strconv.Itoa(code) + ")"
	}
	if code >= 400 && code < 500 {
		e.Kind = notFoundOr(e.Message, e.Kind)
	}
	return e
}

// parseRetryAfter parses a Retry-After value: delay-seconds or an HTTP-date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		return time.Duration(min(max(secs, 0), 1<<31)) * time.Second // capped: no Duration overflow
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d.Round(time.Second)
		}
	}
	return 0
}

// notFoundOr is KindNotFound if msg contains "not found", any case, else k.
func notFoundOr(msg string, k ErrorKind) ErrorKind {
	if strings.Contains(strings.ToLower(msg), "not found") {
		return KindNotFound
	}
	return k
}

// unexpected wraps a decoding problem (a description without body values).
func unexpected(ep Endpoint, err error) *Error {
	return &Error{Kind: KindUpstream, Endpoint: ep, Message: "REST API answered something unexpected: " + err.Error()}
}

// describeDecodeError describes err without quoting the body, as its message can.
func describeDecodeError(err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Errorf("invalid JSON at byte %d", se.Offset)
	case errors.As(err, &te):
		kind := cmp.Or(jsonKinds[te.Type.Kind().String()], "value of the expected type")
		return fmt.Errorf("%s is not a %s", cmp.Or(te.Field, "body"), kind)
	case errors.Is(err, io.EOF):
		return errors.New("empty body")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("truncated JSON")
	}
	return errors.New("invalid JSON value")
}

// jsonKinds names the JSON value a Go kind decodes from.
var jsonKinds = map[string]string{
	"struct": "JSON object", "map": "JSON object", "slice": "JSON array", "array": "JSON array",
	"bool": "JSON boolean", "string": "JSON string", "int": "JSON number", "int64": "JSON number", "float64": "JSON number",
}

// limitedReader reads at most n bytes, then fails with errBodyTooLarge if one
// more comes (io.LimitReader's EOF would look like truncated JSON); err
// records a read error other than io.EOF (a failed connection).
type limitedReader struct {
	r        io.Reader
	n        int64
	exceeded bool
	eof      bool // r said io.EOF
	err      error
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		k, err := l.r.Read(make([]byte, 1))
		if k > 0 {
			l.exceeded = true
			return 0, errBodyTooLarge
		}
		return 0, l.note(err)
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	k, err := l.r.Read(p)
	l.n -= int64(k)
	return k, l.note(err)
}

func (l *limitedReader) note(err error) error {
	if err == io.EOF {
		l.eof = true
	} else if err != nil {
		l.err = err
	}
	return err
}
