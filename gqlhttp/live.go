package gqlhttp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	coderws "github.com/coder/websocket"

	"paygraph/graph/errcode"
	"paygraph/graph/live"
	"paygraph/graph/trusted"
	"paygraph/restclient"
)

// Live configures the streaming transports (AddTransports).
type Live struct {
	// Readers read a request's credentials into its context, and a
	// WebSocket's connection_init fields as headers. Nil: not read.
	Readers func(http.Handler) http.Handler
	// KeepAlive is the interval of SSE comments and WebSocket pings, which
	// keep proxies from closing an idle stream and find dead clients.
	KeepAlive       time.Duration
	OriginPatterns  []string          // where a WebSocket may come from besides ours (it has no CORS preflight)
	MaxConnections  int               // bounds the open WebSockets and SSE streams; one more is refused 503
	MaxLifetime     time.Duration     // the longest life of one connection or stream
	InitTimeout     time.Duration     // the life of a WebSocket before its connection_init
	MaxOperations   int               // bounds the operations in flight on one WebSocket
	WriteTimeout    time.Duration     // the longest a client may take to take one message
	MaxMessageBytes int64             // the largest WebSocket message read (zero: 1 MiB); larger closes it 1009
	RequestTimeout  time.Duration     // each live query's and mutation's deadline; zero: none
	RESTCalls       int               // bounds one WebSocket operation's REST calls in flight
	Budget          *ConnectionBudget // charged each WebSocket operation; nil: none
	// OperationLog logs one access line per WebSocket operation; nil: none.
	OperationLog func(ctx context.Context, transport string) (context.Context, func())
	Now          func() time.Time                 // the clock of session tokens' expiry; nil: time.Now
	Gauge        func(open func() int, limit int) // if set, handed the open connections' count and cap
}

// The defaults of Live's zero fields.
const (
	DefaultKeepAlive      = 15 * time.Second // under common proxies' idle timeouts
	DefaultInitTimeout    = 10 * time.Second // the life of a connection holding no credentials
	DefaultMaxConnections = 1000
	DefaultMaxLifetime    = time.Hour
	DefaultMaxOperations  = 32
	DefaultWriteTimeout   = 10 * time.Second
)

// transportWS is the only WebSocket subprotocol served.
const transportWS = "graphql-transport-ws"

// addLive adds the SSE and WebSocket transports, before POST's (an SSE is a POST too).
func addLive(srv *handler.Server, l Live) {
	l.KeepAlive = positiveOr(l.KeepAlive, DefaultKeepAlive)
	l.MaxConnections = positiveOr(l.MaxConnections, DefaultMaxConnections)
	l.MaxLifetime = positiveOr(l.MaxLifetime, DefaultMaxLifetime)
	l.MaxOperations = positiveOr(l.MaxOperations, DefaultMaxOperations)
	l.InitTimeout = positiveOr(l.InitTimeout, DefaultInitTimeout)
	l.WriteTimeout = positiveOr(l.WriteTimeout, DefaultWriteTimeout)
	l.MaxMessageBytes = positiveOr(l.MaxMessageBytes, 1<<20)
	l.RESTCalls = positiveOr(l.RESTCalls, restclient.DefaultRequestLimit)
	if l.Now == nil {
		l.Now = time.Now
	}
	b := &liveBounds{Live: l, slots: make(chan struct{}, l.MaxConnections)}
	if l.Gauge != nil {
		l.Gauge(func() int { return len(b.slots) }, l.MaxConnections)
	}
	srv.AddTransport(sse{SSE: transport.SSE{KeepAlivePingInterval: l.KeepAlive}, b: b})
	ws := transport.Websocket{
		// A client that has not answered two pings is gone.
		PingPongInterval: l.KeepAlive,
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

func positiveOr[T int | int64 | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// liveBounds are the bounds every live connection of the server shares.
type liveBounds struct {
	Live
	slots chan struct{} // one per open connection, MaxConnections
}

// open takes a slot for c, or answers 503 (nil): c's context until
// MaxLifetime, and end, freeing both.
func (b *liveBounds) open(w http.ResponseWriter, r *http.Request, c *liveConn) (ctx context.Context, end func()) {
	select {
	case b.slots <- struct{}{}:
	default:
		w.Header().Set("Retry-After", "5")
		refuse(w, r, http.StatusServiceUnavailable, errcode.RateLimited,
			"this gateway replica holds as many live connections (WebSocket, SSE) as it may: retry later, or to another replica")
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.WithValue(r.Context(), liveConnKey{}, c), b.MaxLifetime)
	return ctx, func() {
		cancel()
		<-b.slots
	}
}

// liveConn is one live connection (a WebSocket, or an SSE stream).
type liveConn struct {
	ws        bool         // a WebSocket: many operations, each its own scope
	inFlight  atomic.Int32 // operations started and not ended
	expiresAt time.Time    // its session token's expiry; zero: none (set once, by the init)
	stop      func()       // releases what the init made (the expiry's timer); nil: nothing
}

type liveConnKey struct{}

// isStream reports whether r is an SSE POST or a WebSocket upgrade.
func isStream(r *http.Request) bool {
	return isWebsocket(r) || r.Method == http.MethodPost && wantsEventStream(FirstHeader(r.Header, "Accept"))
}

func isWebsocket(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.EqualFold(FirstHeader(r.Header, "Upgrade"), "websocket")
}

// sse is gqlgen's graphql-sse transport, refusing, never echoing, a bad body.
type sse struct {
	transport.SSE
	b *liveBounds
}

// Supports takes POSTs asking for the stream alone (gqlgen's takes urql's queries).
func (t sse) Supports(r *http.Request) bool {
	return wantsEventStream(FirstHeader(r.Header, "Accept")) && t.SSE.Supports(r)
}

func (t sse) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	c := &liveConn{} // it ends at MaxLifetime, and at its token's expiry
	ctx, end := t.b.open(w, r, c)
	if end == nil {
		return
	}
	defer end()
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
		refuseBody(w, r, err)
		return
	}
	var req postBody
	if json.Unmarshal(body, &req) != nil {
		refuse(w, r, http.StatusBadRequest, errcode.BadUserInput, msgNotObject)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if req.DocumentID != "" {
		r = r.WithContext(trusted.WithDocumentID(r.Context(), req.DocumentID))
	}
	t.SSE.Do(eventIDWriter{w}, r, operationScope{GraphExecutor: exec, b: t.b, c: c})
}

// websocket is gqlgen's graphql-transport-ws transport behind the connection bounds.
type websocket struct {
	transport.Websocket
	b *liveBounds
}

// Supports is gqlgen's (TestWebsocketSupportsAsGqlgen).
func (t websocket) Supports(r *http.Request) bool { return FirstHeader(r.Header, "Upgrade") != "" }

// Do refuses the legacy graphql-ws subprotocol (and a client naming none):
// its keep-alive has no answer, so only a write's timeout finds a dead client.
func (t websocket) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	offered := strings.Split(strings.Join(r.Header.Values("Sec-WebSocket-Protocol"), ","), ",")
	if !slices.ContainsFunc(offered, func(p string) bool { return strings.TrimSpace(p) == transportWS }) {
		refuse(w, r, http.StatusBadRequest, errcode.BadUserInput,
			"a WebSocket must ask for the graphql-transport-ws subprotocol (Sec-WebSocket-Protocol); the legacy graphql-ws is not served")
		return
	}
	c := &liveConn{ws: true}
	ctx, end := t.b.open(w, r, c)
	if end == nil {
		return
	}
	defer end()
	if t.b.Budget != nil { // each operation is charged
		ctx = withBudget(ctx, t.b.Budget)
	}
	t.Websocket.Do(w, r.WithContext(ctx), operationScope{GraphExecutor: exec, b: t.b, c: c})
	if c.stop != nil {
		c.stop()
	}
}

// websocketInit reads connection_init's credentials through readers as
// headers, closes one without a usable pair 4403, ends a token's at its expiry.
func websocketInit(readers func(http.Handler) http.Handler) transport.WebsocketInitFunc {
	names := [...]string{"x-api-key", "x-api-secret", "Authorization"}
	forbidden := func(ctx context.Context, msg string) (context.Context, *transport.InitPayload, error) {
		return transport.WithWebsocketCloseCode(ctx, 4403), nil, errors.New(msg) // graphql-transport-ws's Forbidden
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
						h.Add(name, s)
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
			rec := &entryAnswer{header: http.Header{}} // what a refusing reader wrote
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
			if c, _ := out.Value(liveConnKey{}).(*liveConn); c != nil {
				c.expiresAt, c.stop = exp, cancel // websocket.Do calls it
			} else {
				cancel() // not under websocket.Do (tests)
			}
		}
		return out, nil, nil
	}
}

// deadlineImplementation is gqlgen's with each message written under a
// deadline: gqlgen writes under a lock, so one blocked write blocks them all.
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

// liveSendBuffer bounds a WebSocket's send buffer, which Linux may grow to megabytes for a client not reading.
const liveSendBuffer = 256 << 10

// sendBuffer sets liveSendBuffer on the connection it hijacks.
type sendBuffer struct{ http.ResponseWriter }

func (w sendBuffer) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
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

func (c *deadlineConn) WriteJSON(v any) error {
	t := time.AfterFunc(c.timeout, func() { _ = c.WebsocketConn.Close() })
	err := c.WebsocketConn.WriteJSON(v)
	if !t.Stop() && err == nil {
		err = errors.New("websocket write: the client did not read within the write timeout")
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

// writeDeadline gives each write and flush of an SSE stream a deadline.
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

// eventIDWriter gives an SSE next event carrying extensions.eventId its id:
// line, sent back as Last-Event-ID on reconnection (one event per Write).
type eventIDWriter struct{ http.ResponseWriter }

var nextEvent = []byte("event: next\ndata: ")

func (w eventIDWriter) Write(b []byte) (int, error) {
	var resp struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	var id string
	data, ok := bytes.CutPrefix(b, nextEvent)
	ok = ok && json.Unmarshal(bytes.TrimSpace(data), &resp) == nil && json.Unmarshal(resp.Extensions[live.EventIDExtension], &id) == nil
	if _, err := strconv.ParseUint(id, 10, 64); ok && err == nil { // digits: never a line break in a field
		if _, err := w.ResponseWriter.Write([]byte("id: " + id + "\n")); err != nil {
			return 0, err
		}
	}
	return w.ResponseWriter.Write(b)
}

func (w eventIDWriter) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

func (w eventIDWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
