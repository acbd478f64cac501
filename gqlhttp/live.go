package gqlhttp

// This file is the edge of live subscriptions: GraphQL over Server-Sent
// Events (the graphql-sse protocol, distinct connections mode) and over
// WebSocket (graphql-transport-ws), both gqlgen's transports. What is ours
// is around them: the SSE body is checked before gqlgen's transport reads
// it (it would echo a body it cannot decode into its answer and its log),
// a WebSocket's credentials come from its connection_init payload through
// the same readers as the headers of any other request, and a stream is
// freed of the request deadlines (its bound is the subscription's
// lifetime, the subscription's, and the keep-alives).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"paygraph/graph/errcode"
	"paygraph/graph/trusted"
	"strings"
	"sync/atomic"
	"time"

	coderws "github.com/coder/websocket"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/transport"

	"paygraph/restclient"
)

// Live configures the streaming transports (AddTransports).
type Live struct {
	// Readers are the middlewares that read a request's credentials into
	// its context (Credentials, the session-token reader, and the
	// refusals of ambiguous ones), run over a WebSocket's connection_init
	// payload as if its fields were headers. Nil: the payload is not read
	// (only the upgrade request's own headers count).
	Readers func(http.Handler) http.Handler
	// KeepAlive is the interval of SSE comments and WebSocket pings that
	// keep proxies from closing an idle stream and find dead clients. If
	// zero, 15 s.
	KeepAlive time.Duration
	// OriginPatterns are the browser origins (host patterns) a WebSocket
	// may come from besides the gateway's own; CORS guards SSE, but a
	// WebSocket has no preflight.
	OriginPatterns []string

	// MaxConnections bounds the WebSocket connections and SSE streams open
	// at once in this process (the gateway: half of HTTP_MAX_CONNECTIONS): one more is refused
	// before the upgrade, HTTP 503 RATE_LIMITED with Retry-After. Zero:
	// DefaultMaxConnections.
	MaxConnections int
	// MaxLifetime is the longest life of one WebSocket connection or SSE
	// stream; it is then closed and the client
	// connects again. Zero: DefaultMaxLifetime.
	MaxLifetime time.Duration
	// InitTimeout is the life of a WebSocket that has not sent its
	// connection_init: it is closed then, having
	// proved nothing. Zero: DefaultInitTimeout.
	InitTimeout time.Duration
	// MaxOperations bounds the operations in flight at once on one
	// WebSocket connection; one more is refused,
	// RATE_LIMITED, before it runs. Zero: DefaultMaxOperations.
	MaxOperations int
	// WriteTimeout is how long the client may take to take one message
	// (the gateway: a third of REQUEST_TIMEOUT): past it the connection is closed, so a client
	// that stops reading holds nothing for long. Zero: DefaultWriteTimeout.
	WriteTimeout time.Duration
	// MaxMessageBytes is the largest WebSocket message read
	// (MAX_BODY_BYTES, as for a request body); larger closes the
	// connection (1009). Zero: 1 MiB.
	MaxMessageBytes int64
	// RequestTimeout is the deadline of each query and mutation of a
	// WebSocket or SSE (REQUEST_TIMEOUT, as for a POST); a subscription
	// keeps its own bounds. Zero: none.
	RequestTimeout time.Duration
	// RESTCalls bounds the REST calls one WebSocket operation has in
	// flight (REST_MAX_CONCURRENCY); zero: restclient.DefaultRequestLimit.
	RESTCalls int
	// Budget is charged each WebSocket operation (OperationBudget: the
	// merchant's rate limits); nil: none.
	Budget *ConnectionBudget
	// OperationLog logs one access line per WebSocket operation
	// (observe.OperationLog); nil: none.
	OperationLog func(ctx context.Context, transport string) (context.Context, func())
	// Now is the clock a session token's expiry is checked against; nil:
	// time.Now.
	Now func() time.Time
	// Gauge, when set, is handed once what reads the live connections
	// open now and their cap (MaxConnections), for the metrics'
	// paygraph_connections gauge, read when /metrics is scraped.
	Gauge func(open func() int, limit int)
}

// DefaultKeepAlive is Live.KeepAlive's default: under the 30 to 60 s idle
// timeouts of common proxies and load balancers.
const DefaultKeepAlive = 15 * time.Second

// DefaultInitTimeout is how long a WebSocket may wait before its
// connection_init: the life of a connection that holds no credentials
// (one whose connection_init carries none is closed at once, 4403).
const DefaultInitTimeout = 10 * time.Second

// The defaults of Live's connection bounds (docs/reliability.md, issue 21).
const (
	// DefaultMaxConnections: an idle WebSocket costs about 42 KiB of a
	// 192 MiB pod, an operation in flight more; 1,000 leave room for the
	// requests.
	DefaultMaxConnections = 1000
	DefaultMaxLifetime    = time.Hour
	DefaultMaxOperations  = 32
	DefaultWriteTimeout   = 10 * time.Second
)

// transportWS is the only WebSocket subprotocol served.
const transportWS = "graphql-transport-ws"

// addLive adds the SSE and WebSocket transports, before the JSON POST one
// (an SSE request is a JSON POST too: the first transport that supports a
// request serves it); each gives its operations their own scope
// (operationScope).
func addLive(srv *handler.Server, l Live) {
	if l.KeepAlive <= 0 {
		l.KeepAlive = DefaultKeepAlive
	}
	if l.MaxConnections <= 0 {
		l.MaxConnections = DefaultMaxConnections
	}
	if l.MaxLifetime <= 0 {
		l.MaxLifetime = DefaultMaxLifetime
	}
	if l.MaxOperations <= 0 {
		l.MaxOperations = DefaultMaxOperations
	}
	if l.InitTimeout <= 0 {
		l.InitTimeout = DefaultInitTimeout
	}
	if l.WriteTimeout <= 0 {
		l.WriteTimeout = DefaultWriteTimeout
	}
	if l.MaxMessageBytes <= 0 {
		l.MaxMessageBytes = 1 << 20
	}
	if l.RESTCalls <= 0 {
		l.RESTCalls = restclient.DefaultRequestLimit
	}
	if l.Now == nil {
		l.Now = time.Now
	}
	b := &liveBounds{Live: l, slots: make(chan struct{}, l.MaxConnections)}
	if l.Gauge != nil {
		l.Gauge(func() int { return len(b.slots) }, l.MaxConnections)
	}
	srv.AddTransport(sse{SSE: transport.SSE{KeepAlivePingInterval: l.KeepAlive}, b: b})
	ws := transport.Websocket{
		// graphql-transport-ws: a ping every KeepAlive, and a client that
		// has not answered (pong) within two of them is gone: its
		// connection closes and its subscriptions end (the read deadline
		// lifted by Deadline is set again here). The legacy graphql-ws
		// subprotocol is refused (websocket.Do).
		PingPongInterval: l.KeepAlive,
		// A connection that never sends connection_init holds a socket
		// and a goroutine: it gets InitTimeout (graphql-ws clients send it
		// at once; their own server default is 3 s).
		InitTimeout:      l.InitTimeout,
		PayloadReadLimit: &b.MaxMessageBytes,
		Implementation: deadlineImplementation{
			CoderWebsocketImplementation: transport.CoderWebsocketImplementation{
				AcceptOptions: coderws.AcceptOptions{OriginPatterns: l.OriginPatterns},
			},
			timeout: l.WriteTimeout,
		},
		InitFunc: websocketInit(l.Readers),
	}
	srv.AddTransport(websocket{Websocket: ws, b: b})
}

// liveBounds are the bounds every live connection of the server shares.
type liveBounds struct {
	Live
	slots chan struct{} // one per open connection, MaxConnections
}

// open takes a connection's slot, or answers 503 (false).
func (b *liveBounds) open(w http.ResponseWriter, r *http.Request) bool {
	select {
	case b.slots <- struct{}{}:
		return true
	default:
		w.Header().Set("Retry-After", "5")
		refuse(w, r, http.StatusServiceUnavailable, errcode.RateLimited,
			"this gateway replica holds as many live connections (WebSocket, SSE) as it may: retry later, or to another replica")
		return false
	}
}

func (b *liveBounds) close() { <-b.slots }

// liveConn is one live connection (a WebSocket, or an SSE stream) in its
// context: what the per-operation scope (operation.go) needs of it.
type liveConn struct {
	ws        bool         // a WebSocket: many operations, each its own scope
	inFlight  atomic.Int32 // operations started and not ended
	expiresAt time.Time    // its session token's expiry; zero: none (set once, by the init)
	stop      func()       // releases what the init made (the expiry's timer); nil: nothing
}

type liveConnKey struct{}

func liveConnFrom(ctx context.Context) *liveConn {
	c, _ := ctx.Value(liveConnKey{}).(*liveConn)
	return c
}

// isStream reports whether r asks for a stream: an SSE POST (one that
// takes only the event stream: wantsEventStream) or a WebSocket upgrade.
func isStream(r *http.Request) bool {
	return isWebsocket(r) || r.Method == http.MethodPost && wantsEventStream(FirstHeader(r.Header, "Accept"))
}

func isWebsocket(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.EqualFold(FirstHeader(r.Header, "Upgrade"), "websocket")
}

// sse is gqlgen's SSE transport behind a check of the body: a body that
// is not a GraphQL request is refused with a code and a fixed message,
// never echoed.
type sse struct {
	transport.SSE
	b *liveBounds
}

// Supports takes the POSTs that ask for the event stream alone
// (wantsEventStream): gqlgen's would take every POST whose Accept names
// text/event-stream, urql's queries included, and serve them as streams,
// without their deadline. wantsEventStream first: it answers a POST
// that names no event stream without gqlgen's two Header.Get.
func (t sse) Supports(r *http.Request) bool {
	return wantsEventStream(FirstHeader(r.Header, "Accept")) && t.SSE.Supports(r)
}

func (t sse) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	if !t.b.open(w, r) {
		return
	}
	defer t.b.close()
	// The stream ends at MaxLifetime, and at its session token's expiry.
	c := &liveConn{}
	ctx, cancel := context.WithTimeout(context.WithValue(r.Context(), liveConnKey{}, c), t.b.MaxLifetime)
	defer cancel()
	if exp, ok := tokenExpiry(ctx); ok {
		c.expiresAt = exp
		var cancelExp context.CancelFunc
		ctx, cancelExp = context.WithDeadline(ctx, exp)
		defer cancelExp()
	}
	r = r.WithContext(ctx)
	w = &writeDeadline{ResponseWriter: w, rc: http.NewResponseController(w), timeout: t.b.WriteTimeout}
	body, err := io.ReadAll(r.Body) // under RequestSize's MaxBytesReader
	if err != nil {
		status, msg := http.StatusBadRequest, "could not read the request body"
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			status, msg = http.StatusRequestEntityTooLarge, "request body is larger than the limit"
		}
		refuse(w, r, status, errcode.BadUserInput, msg)
		return
	}
	var req struct {
		Query         string         `json:"query"`
		OperationName string         `json:"operationName"`
		Variables     map[string]any `json:"variables"`
		Extensions    map[string]any `json:"extensions"`
		DocumentID    string         `json:"documentId"` // trusted documents, as over POST (graph/trusted)
	}
	if json.Unmarshal(body, &req) != nil {
		refuse(w, r, http.StatusBadRequest, errcode.BadUserInput,
			`request body must be a JSON object {"query": string, "operationName": string, "variables": object, "extensions": object}`)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if req.DocumentID != "" {
		r = r.WithContext(trusted.WithDocumentID(r.Context(), req.DocumentID))
	}
	t.SSE.Do(eventIDWriter{w}, r, operationScope{GraphExecutor: exec, b: t.b, c: c})
}

// websocket is gqlgen's WebSocket transport behind the connection bounds:
// the subprotocol, the replica's connection cap (both before the upgrade),
// the connection's life and its per-operation rate limit.
type websocket struct {
	transport.Websocket
	b *liveBounds
}

// Supports is gqlgen's (any Upgrade header), read without Header.Get:
// every POST and GET asks it (TestWebsocketSupportsAsGqlgen).
func (t websocket) Supports(r *http.Request) bool {
	return FirstHeader(r.Header, "Upgrade") != ""
}

// Do refuses the legacy graphql-ws subprotocol (and a client naming none,
// which gqlgen would serve as graphql-ws): its keep-alive has no answer, so
// a dead client is found only when a write times out, and no maintained
// client needs it (graphql-ws, Apollo Client, urql, GraphiQL all speak
// graphql-transport-ws; subscriptions-transport-ws, its library, is
// unmaintained since 2021).
func (t websocket) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	if !offers(r.Header.Values("Sec-WebSocket-Protocol"), transportWS) {
		refuse(w, r, http.StatusBadRequest, errcode.BadUserInput,
			"a WebSocket must ask for the graphql-transport-ws subprotocol (Sec-WebSocket-Protocol); the legacy graphql-ws is not served")
		return
	}
	if !t.b.open(w, r) {
		return
	}
	defer t.b.close()
	c := &liveConn{ws: true}
	ctx, cancel := context.WithTimeout(context.WithValue(r.Context(), liveConnKey{}, c), t.b.MaxLifetime)
	defer cancel()
	if t.b.Budget != nil {
		// Each operation is charged (the upgrade was one request).
		ctx = withBudget(ctx, t.b.Budget)
	}
	t.Websocket.Do(w, r.WithContext(ctx), operationScope{GraphExecutor: exec, b: t.b, c: c})
	if c.stop != nil {
		c.stop()
	}
}

// offers reports whether the Sec-WebSocket-Protocol values name p.
func offers(values []string, p string) bool {
	for _, v := range values {
		for _, item := range strings.Split(v, ",") {
			if strings.TrimSpace(item) == p {
				return true
			}
		}
	}
	return false
}

// websocketInit reads the credentials of a connection_init payload:
// x-api-key and x-api-secret, or Authorization: Bearer <session token>,
// through readers (nil: the payload is not read), exactly as the headers
// of a request are read; a payload without any keeps the upgrade
// request's. A connection left without a credential pair is closed, 4403
// Forbidden, as is one whose credentials are refused (with the refusal's
// message): an anonymous connection could only answer UNAUTHENTICATED,
// and would hold a socket for nothing. A session token's connection ends
// at the token's expiry (its context's deadline: gqlgen closes the
// connection when it ends).
func websocketInit(readers func(http.Handler) http.Handler) transport.WebsocketInitFunc {
	names := [...]string{"x-api-key", "x-api-secret", "Authorization"}
	forbidden := func(ctx context.Context, msg string) (context.Context, *transport.InitPayload, error) {
		return transport.WithWebsocketCloseCode(ctx, closeForbidden), nil, errors.New(msg)
	}
	return func(ctx context.Context, payload transport.InitPayload) (context.Context, *transport.InitPayload, error) {
		h := http.Header{}
		if readers != nil {
			for k, v := range payload {
				for _, name := range names {
					if strings.EqualFold(k, name) {
						s, ok := v.(string)
						if !ok {
							return forbidden(ctx, name+" in connection_init must be a string")
						}
						h[http.CanonicalHeaderKey(name)] = append(h[http.CanonicalHeaderKey(name)], s)
					}
				}
			}
		}
		out := ctx
		if len(h) > 0 {
			if callerRead(ctx) || BearerSecrets(ctx) != nil {
				return forbidden(ctx, "send credentials either on the upgrade request or in connection_init, not both")
			}
			out = nil
			rec := &recorder{h: http.Header{}}
			r := (&http.Request{Method: http.MethodGet, Header: h}).WithContext(ctx)
			readers(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { out = r.Context() })).ServeHTTP(rec, r)
			if out == nil {
				var body struct {
					Errors []struct{ Message string } `json:"errors"`
				}
				if json.Unmarshal(rec.body.Bytes(), &body) == nil && len(body.Errors) > 0 {
					return forbidden(ctx, body.Errors[0].Message)
				}
				return forbidden(ctx, "credentials refused")
			}
		}
		if _, ok := restclient.CredentialsFrom(out); !ok {
			return forbidden(ctx, "connection_init must carry x-api-key and x-api-secret, or Authorization: Bearer <session token>")
		}
		if exp, ok := tokenExpiry(out); ok {
			var cancel context.CancelFunc
			out, cancel = context.WithDeadline(out, exp)
			if c := liveConnFrom(out); c != nil {
				c.expiresAt, c.stop = exp, cancel // websocket.Do calls it
			} else {
				cancel() // not under websocket.Do (tests)
			}
		}
		return out, nil, nil
	}
}

// closeForbidden is graphql-transport-ws's close code for a connection
// whose credentials are missing or refused.
const closeForbidden = 4403

// deadlineImplementation accepts WebSocket connections as gqlgen's
// CoderWebsocketImplementation does, each message written under a
// deadline: a client that does not take one within timeout has its
// connection closed, which ends every operation of it. (gqlgen writes
// under the connection's lock, so without it one blocked write would
// block the read loop, the pings and every operation.)
type deadlineImplementation struct {
	transport.CoderWebsocketImplementation
	timeout time.Duration
}

func (i deadlineImplementation) Accept(w http.ResponseWriter, r *http.Request, o transport.WebsocketAcceptOptions) (transport.WebsocketConn, error) {
	o.Subprotocols = []string{transportWS}
	c, err := i.CoderWebsocketImplementation.Accept(sendBuffer{w}, r, o)
	if err != nil {
		return nil, err
	}
	return &deadlineConn{WebsocketConn: c, timeout: i.timeout}, nil
}

// liveSendBuffer bounds the kernel's send buffer of a WebSocket
// connection. Loopback and fast links let Linux grow it to megabytes
// (tcp_wmem), which a client that stops reading fills with answers the
// gateway computes for nothing before any write blocks (and which a pod's
// cgroup is charged for); 256 KiB is 25 answers of 10 KB, and still 2.5
// MB/s at a 100 ms round trip.
const liveSendBuffer = 256 << 10

// sendBuffer sets liveSendBuffer on the connection it hijacks.
type sendBuffer struct{ http.ResponseWriter }

func (w sendBuffer) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	// A *net.TCPConn, or a listener's wrapper of one that passes the
	// setting on (the gateway's connection cap).
	if tc, ok := c.(interface{ SetWriteBuffer(int) error }); ok {
		_ = tc.SetWriteBuffer(liveSendBuffer)
	}
	return c, rw, err
}

func (w sendBuffer) Unwrap() http.ResponseWriter { return w.ResponseWriter }

type deadlineConn struct {
	transport.WebsocketConn
	timeout time.Duration
}

var (
	_ transport.WebsocketReadLimiter   = (*deadlineConn)(nil)
	_ transport.WebsocketReadDeadliner = (*deadlineConn)(nil)
)

// errWriteTimeout is a write the client did not take in time.
var errWriteTimeout = errors.New("websocket write: the client did not read within the write timeout")

func (c *deadlineConn) WriteJSON(v any) error {
	t := time.AfterFunc(c.timeout, func() { _ = c.WebsocketConn.Close() })
	err := c.WebsocketConn.WriteJSON(v)
	if !t.Stop() && err == nil {
		err = errWriteTimeout
	}
	return err
}

func (c *deadlineConn) SetReadLimit(n int64) {
	if l, ok := c.WebsocketConn.(transport.WebsocketReadLimiter); ok {
		l.SetReadLimit(n)
	}
}

func (c *deadlineConn) SetReadDeadline(t time.Time) error {
	if d, ok := c.WebsocketConn.(transport.WebsocketReadDeadliner); ok {
		return d.SetReadDeadline(t)
	}
	return nil
}

// writeDeadline gives each write and flush of an SSE stream a deadline:
// a client that stops reading has its stream cut once the socket's
// buffers are full and timeout passed.
type writeDeadline struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func (w *writeDeadline) Write(b []byte) (int, error) {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
	return w.ResponseWriter.Write(b)
}

func (w *writeDeadline) Flush() {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
	_ = w.rc.Flush()
}

func (w *writeDeadline) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// recorder keeps what a refusing reader wrote.
type recorder struct {
	h    http.Header
	body bytes.Buffer
}

func (r *recorder) Header() http.Header         { return r.h }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorder) WriteHeader(int)             {}
