package gqlhttp

// This file is the edge of live subscriptions: GraphQL over Server-Sent
// Events (the graphql-sse protocol, distinct connections mode) and over
// WebSocket (graphql-transport-ws), both gqlgen's transports. What is ours
// is around them: the SSE body is checked before gqlgen's transport reads
// it (it would echo a body it cannot decode into its answer and its log),
// a WebSocket's credentials come from its connection_init payload through
// the same readers as the headers of any other request, and a stream is
// freed of the request deadlines (its bound is the subscription's
// lifetime, SUBSCRIPTION_MAX_LIFETIME, and the keep-alives).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	coderws "github.com/coder/websocket"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/transport"

	"paygraph/graph"
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
}

// DefaultKeepAlive is Live.KeepAlive's default: under the 30 to 60 s idle
// timeouts of common proxies and load balancers.
const DefaultKeepAlive = 15 * time.Second

// DefaultInitTimeout is how long a WebSocket may wait before its
// connection_init.
const DefaultInitTimeout = 10 * time.Second

// addLive adds the SSE and WebSocket transports, before the JSON POST one
// (an SSE request is a JSON POST too: the first transport that supports a
// request serves it).
func addLive(add func(graphql.Transport), l Live) {
	if l.KeepAlive <= 0 {
		l.KeepAlive = DefaultKeepAlive
	}
	add(sse{transport.SSE{KeepAlivePingInterval: l.KeepAlive}})
	ws := transport.Websocket{
		// graphql-transport-ws: a ping every KeepAlive, and a client that
		// has not answered (pong) within two of them is gone: its
		// connection closes and its subscriptions end (the read deadline
		// lifted by Deadline is set again here). KeepAlivePingInterval is
		// the legacy graphql-ws subprotocol's.
		PingPongInterval:      l.KeepAlive,
		KeepAlivePingInterval: l.KeepAlive,
		// A connection that never sends connection_init holds a socket
		// and a goroutine: it gets InitTimeout (graphql-ws clients send it
		// at once; their own server default is 3 s).
		InitTimeout: DefaultInitTimeout,
		Implementation: transport.CoderWebsocketImplementation{
			AcceptOptions: coderws.AcceptOptions{OriginPatterns: l.OriginPatterns},
		},
	}
	if l.Readers != nil {
		ws.InitFunc = websocketInit(l.Readers)
	}
	add(ws)
}

// isStream reports whether r asks for a stream: an SSE POST (one that
// takes only the event stream: wantsEventStream) or a WebSocket upgrade.
func isStream(r *http.Request) bool {
	return isWebsocket(r) || r.Method == http.MethodPost && wantsEventStream(r.Header.Get("Accept"))
}

func isWebsocket(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

// sse is gqlgen's SSE transport behind a check of the body: a body that
// is not a GraphQL request is refused with a code and a fixed message,
// never echoed.
type sse struct{ transport.SSE }

// Supports takes the POSTs that ask for the event stream alone
// (wantsEventStream): gqlgen's would take every POST whose Accept names
// text/event-stream, urql's queries included, and serve them as streams,
// without their deadline.
func (t sse) Supports(r *http.Request) bool {
	return t.SSE.Supports(r) && wantsEventStream(r.Header.Get("Accept"))
}

func (t sse) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	body, err := io.ReadAll(r.Body) // under RequestSize's MaxBytesReader
	if err != nil {
		status, msg := http.StatusBadRequest, "could not read the request body"
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			status, msg = http.StatusRequestEntityTooLarge, "request body is larger than the limit"
		}
		refuse(w, r, status, graph.CodeBadUserInput, msg)
		return
	}
	var req struct {
		Query         string         `json:"query"`
		OperationName string         `json:"operationName"`
		Variables     map[string]any `json:"variables"`
		Extensions    map[string]any `json:"extensions"`
	}
	if json.Unmarshal(body, &req) != nil {
		refuse(w, r, http.StatusBadRequest, graph.CodeBadUserInput,
			`request body must be a JSON object {"query": string, "operationName": string, "variables": object, "extensions": object}`)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	t.SSE.Do(w, r, exec)
}

// websocketInit reads the credentials of a connection_init payload:
// x-api-key and x-api-secret, or Authorization: Bearer <session token>,
// through readers, exactly as the headers of a request are read. A payload
// without any leaves the upgrade request's context as it is (a client
// that can set headers may send them on the upgrade). A refusal closes
// the connection with its message.
func websocketInit(readers func(http.Handler) http.Handler) transport.WebsocketInitFunc {
	names := [...]string{"x-api-key", "x-api-secret", "Authorization"}
	return func(ctx context.Context, payload transport.InitPayload) (context.Context, *transport.InitPayload, error) {
		h := http.Header{}
		for k, v := range payload {
			for _, name := range names {
				if strings.EqualFold(k, name) {
					s, ok := v.(string)
					if !ok {
						return ctx, nil, errors.New(name + " in connection_init must be a string")
					}
					h[http.CanonicalHeaderKey(name)] = append(h[http.CanonicalHeaderKey(name)], s)
				}
			}
		}
		if len(h) == 0 {
			return ctx, nil, nil
		}
		if callerRead(ctx) || BearerSecrets(ctx) != nil {
			return ctx, nil, errors.New("send credentials either on the upgrade request or in connection_init, not both")
		}
		var out context.Context
		rec := &recorder{h: http.Header{}}
		r := (&http.Request{Method: http.MethodGet, Header: h}).WithContext(ctx)
		readers(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { out = r.Context() })).ServeHTTP(rec, r)
		if out == nil {
			var body struct {
				Errors []struct{ Message string } `json:"errors"`
			}
			if json.Unmarshal(rec.body.Bytes(), &body) == nil && len(body.Errors) > 0 {
				return ctx, nil, errors.New(body.Errors[0].Message)
			}
			return ctx, nil, errors.New("credentials refused")
		}
		return out, nil, nil
	}
}

// recorder keeps what a refusing reader wrote.
type recorder struct {
	h    http.Header
	body bytes.Buffer
}

func (r *recorder) Header() http.Header         { return r.h }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorder) WriteHeader(int)             {}
