package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/99designs/gqlgen/graphql"

	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/ast"

	"paygraph/graph/model"
	"paygraph/graph/relay"
	"paygraph/restclient"
)

// The credential headers forwarded, unchanged, to the REST API.
const (
	HeaderAPIKey    = "x-api-key"
	HeaderAPISecret = "x-api-secret"
)

// The credential headers as net/http stores them: Header.Get with the
// lower-case names would canonicalise them into a new string per request.
var (
	canonicalAPIKey    = http.CanonicalHeaderKey(HeaderAPIKey)
	canonicalAPISecret = http.CanonicalHeaderKey(HeaderAPISecret)
)

// HandlerConfig configures the /graphql handler.
type HandlerConfig struct {
	REST        REST
	FetchLimits *FetchLimits
	// CursorKeys sign pagination cursors (CURSOR_KEYS); nil: a random key
	// for the life of the process.
	CursorKeys    *relay.Keys
	MaxComplexity int // refuse operations whose estimated REST fan-out is larger
	APQCacheSize  int // automatic persisted queries kept in memory, when APQCache is nil
	// APQCache stores automatic persisted queries (a shared store lets one
	// replica serve a hash registered on another); nil: an in-memory LRU.
	APQCache       graphql.Cache[string]
	QueryCacheSize int // parsed and validated documents kept in memory
	Limits         QueryLimits
	MaxBodyBytes   int64         // largest request body accepted
	RequestTimeout time.Duration // deadline of one GraphQL request, REST calls included
	Logger         *slog.Logger
	// RequestID names the request in logs (the access log's id), if any.
	RequestID func(context.Context) string
	// Extensions are added to the gqlgen server (metrics, tracing).
	Extensions []graphql.HandlerExtension
	// OnRefused, when set, is told of every request refused before the
	// GraphQL server saw it (body too large, not JSON, wrong method or
	// content type), with the error code it got: the extensions never see
	// those requests.
	OnRefused func(ctx context.Context, code string)

	// MaxResponseBytes bounds the bytes one response may build
	// (ResponseBudget); 0: DefaultMaxResponseBytes, negative: no bound.
	MaxResponseBytes int64
}

func (c *HandlerConfig) defaults() {
	if c.FetchLimits == nil {
		c.FetchLimits = NewFetchLimits(16, 256, 0)
	}
	if c.MaxComplexity <= 0 {
		c.MaxComplexity = 5000
	}
	if c.APQCacheSize <= 0 {
		c.APQCacheSize = 1000
	}
	if c.QueryCacheSize <= 0 {
		c.QueryCacheSize = 1000
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = 256 << 10
	}
	if c.MaxResponseBytes == 0 {
		c.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.RequestID == nil {
		c.RequestID = func(context.Context) string { return "" }
	}
}

// NewHandler returns the /graphql HTTP handler: POST and GET transports,
// APQ, the parsed-query cache, the complexity limit, the error presenter,
// and the middleware that takes the caller's credentials and creates the
// request's loaders.
func NewHandler(cfg HandlerConfig) http.Handler {
	cfg.defaults()
	es := NewExecutableSchema(Config{
		Resolvers:  &Resolver{REST: cfg.REST, Limits: cfg.FetchLimits, Cursors: cfg.CursorKeys},
		Complexity: complexityRoot(),
	})
	srv := handler.New(es)
	srv.AddTransport(transport.Options{})
	srv.AddTransport(transport.GET{})
	refuse := refuser(cfg.OnRefused)
	srv.AddTransport(jsonPOST{refuse: refuse, maxResponse: cfg.MaxResponseBytes})
	srv.SetQueryCache(lru.New[*ast.QueryDocument](cfg.QueryCacheSize))
	srv.Use(extension.Introspection{})
	apq := cfg.APQCache
	if apq == nil {
		apq = lru.New[string](cfg.APQCacheSize)
	}
	srv.Use(extension.AutomaticPersistedQuery{Cache: apq})
	srv.Use(cfg.Limits)
	srv.Use(extension.FixedComplexityLimit(cfg.MaxComplexity))
	for _, ext := range cfg.Extensions {
		srv.Use(ext)
	}
	// Inside the others: metrics and traces see the response it leaves.
	srv.Use(ResponseBudget{MaxBytes: cfg.MaxResponseBytes})
	srv.SetParserTokenLimit(parserTokenLimit)
	srv.SetErrorPresenter(ErrorPresenter)
	recovered := func(ctx context.Context, p any) error {
		cfg.Logger.ErrorContext(ctx, "panic in resolver", "request_id", cfg.RequestID(ctx),
			"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		return errPanic
	}
	srv.SetRecoverFunc(recovered)
	cfg.FetchLimits.recovered = recovered
	h := guardTransport(refuse, requestScope(cfg.RequestTimeout, cfg.REST, cfg.FetchLimits, srv))
	return limitRequest(cfg.MaxBodyBytes, refuse, h)
}

// requestScope gives each request, in one copy of the request: the
// deadline of the whole request (REST calls included); the caller's
// x-api-key and x-api-secret, where the REST client takes them from (when
// either is missing nothing is put there, and every REST-backed field
// answers UNAUTHENTICATED without a call; introspection still works); and
// fresh loaders, so that no cache outlives the request.
func requestScope(timeout time.Duration, rest REST, limits *FetchLimits, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		if timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, timeout)
			defer cancel()
		}
		if key, secret := r.Header.Get(canonicalAPIKey), r.Header.Get(canonicalAPISecret); key != "" && secret != "" {
			ctx = restclient.WithCredentials(ctx, restclient.Credentials{APIKey: key, APISecret: secret})
		}
		ctx = context.WithValue(ctx, loadersKey{}, NewLoaders(rest, limits))
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// parserTokenLimit bounds the lexer's work on one document.
const parserTokenLimit = 20000

var errPanic = errors.New("internal error")

// limitRequest refuses bodies over maxBody (413, before gqlgen reads
// them).
func limitRequest(maxBody int64, refuse refuser, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > maxBody {
			refuse.answer(w, r, http.StatusRequestEntityTooLarge, CodeBadUserInput,
				fmt.Sprintf("request body is %d bytes, more than the limit of %d", r.ContentLength, maxBody))
			return
		}
		if r.ContentLength < 0 && r.Body != nil && r.Body != http.NoBody {
			// Unknown length (chunked): read it here, so that an oversized
			// body is a 413 rather than a decode error further down.
			body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
			if err != nil || int64(len(body)) > maxBody {
				refuse.answer(w, r, http.StatusRequestEntityTooLarge, CodeBadUserInput,
					fmt.Sprintf("request body is larger than the limit of %d bytes", maxBody))
				return
			}
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		} else {
			r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		}
		next.ServeHTTP(w, r)
	})
}

// refuser reports a refused request (HandlerConfig.OnRefused); nil
// reports nothing.
type refuser func(ctx context.Context, code string)

// answer refuses r with a GraphQL-shaped error body, and reports it.
func (f refuser) answer(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	if f != nil {
		f(r.Context(), code)
	}
	writeHTTPError(w, status, code, msg)
}

// writeHTTPError answers with a GraphQL-shaped error body.
func writeHTTPError(w http.ResponseWriter, status int, code, msg string) {
	body, _ := json.Marshal(map[string]any{"errors": []any{map[string]any{
		"message": msg, "extensions": map[string]string{"code": code}}}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// complexityRoot estimates REST fan-out: payments(first: n) costs n times
// its selection, nodes(ids) the number of ids times its selection.
func complexityRoot() ComplexityRoot {
	var c ComplexityRoot
	c.Query.Payments = func(child int, first *int, _ *string, _ *model.PaymentStatus) int {
		n := defaultFirst
		if first != nil {
			// Out-of-range values are refused by the resolver with
			// BAD_USER_INPUT; clamp so that the error says so.
			n = min(max(*first, 0), maxFirst)
		}
		return 1 + n*max(child, 1)
	}
	c.Query.Nodes = func(child int, ids []string) int {
		return 1 + min(len(ids), MaxNodes)*max(child, 1)
	}
	return c
}
