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

	"paygraph/restclient"
	"paygraph/trusteddocs"
)

// The credential headers forwarded, unchanged, to the REST API.
const (
	HeaderAPIKey    = "x-api-key"
	HeaderAPISecret = "x-api-secret"
)

// The credential headers as net/http stores them (the keys of
// http.Header), computed once rather than per request.
var (
	canonicalAPIKey    = http.CanonicalHeaderKey(HeaderAPIKey)
	canonicalAPISecret = http.CanonicalHeaderKey(HeaderAPISecret)
)

// HandlerConfig configures the /graphql handler.
type HandlerConfig struct {
	REST        REST
	FetchLimits *FetchLimits
	// MaxComplexity refuses operations that may make more REST calls
	// (restCalls); zero: 500.
	MaxComplexity int
	APQCacheSize  int // automatic persisted queries kept in memory, when APQCache is nil
	// APQCache stores automatic persisted queries (a shared store lets one
	// replica serve a hash registered on another); nil: an in-memory LRU.
	APQCache graphql.Cache[string]
	// QueryCacheBytes bounds the parsed and validated documents kept in
	// memory, by their estimated heap (docCost); zero: 16 MiB.
	QueryCacheBytes int64
	// Limits are checked before validation; zero fields: 15 levels, 1000
	// fields, 32768 bytes.
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

	// TrustedDocuments, when not nil, is the manifest of trusted documents
	// and its mode (trusteddocs.go); OnTrustedDocument, when set, is told
	// each request's decision (metrics, and the log of unlisted hashes).
	TrustedDocuments  *trusteddocs.Store
	OnTrustedDocument func(ctx context.Context, d trusteddocs.Decision)

	// RESTPerRequest bounds the REST calls one GraphQL request has in
	// flight (REST_MAX_CONCURRENCY): requestScope puts it in the request's
	// context, where the REST client's limiter finds it; 0:
	// restclient.DefaultRequestLimit.
	RESTPerRequest int
}

func (c *HandlerConfig) defaults() {
	if c.FetchLimits == nil {
		c.FetchLimits = &FetchLimits{}
	}
	if c.RESTPerRequest <= 0 {
		c.RESTPerRequest = restclient.DefaultRequestLimit
	}
	if c.MaxComplexity <= 0 {
		c.MaxComplexity = 500
	}
	if c.APQCacheSize <= 0 {
		c.APQCacheSize = 1000
	}
	if c.QueryCacheBytes <= 0 {
		c.QueryCacheBytes = 16 << 20
	}
	if c.Limits.MaxDepth <= 0 {
		c.Limits.MaxDepth = 15
	}
	if c.Limits.MaxFields <= 0 {
		c.Limits.MaxFields = 1000
	}
	if c.Limits.MaxQueryLength <= 0 {
		c.Limits.MaxQueryLength = 32768
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = 256 << 10
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.RequestID == nil {
		c.RequestID = func(context.Context) string { return "" }
	}
}

// NewHandler returns the /graphql HTTP handler: POST and GET transports,
// APQ, the parsed-query cache, the query limits, the error presenter and
// cap, the refusal of ambiguous credential headers (the pair itself is read
// by Credentials, at the top of the router, or here when no outer
// Credentials did), and the middleware that creates the request's loaders.
func NewHandler(cfg HandlerConfig) http.Handler {
	h, _ := newHandler(cfg)
	return h
}

// newHandler is NewHandler, with its parsed-query cache for tests.
func newHandler(cfg HandlerConfig) (http.Handler, *queryCache) {
	cfg.defaults()
	es := NewExecutableSchema(Config{
		Resolvers: &Resolver{REST: cfg.REST, Limits: cfg.FetchLimits},
	})
	srv := handler.New(es)
	srv.AddTransport(transport.Options{})
	srv.AddTransport(transport.GET{})
	refuse := refuser(cfg.OnRefused)
	srv.AddTransport(jsonPOST{refuse: refuse})
	cache := newQueryCache(cfg.QueryCacheBytes)
	srv.SetQueryCache(cache)
	srv.Use(extension.Introspection{})
	// Before APQ: a listed hash runs the manifest's text, and enforce
	// refuses the rest before the APQ cache or the parser sees it.
	srv.Use(trustedDocuments{store: cfg.TrustedDocuments, report: cfg.OnTrustedDocument})
	apq := cfg.APQCache
	if apq == nil {
		apq = lru.New[string](cfg.APQCacheSize)
	}
	srv.Use(extension.AutomaticPersistedQuery{Cache: apq})
	// After APQ, which turns a hash into the query the limits check.
	srv.Use(queryLimits{QueryLimits: cfg.Limits, maxComplexity: cfg.MaxComplexity, cache: cache})
	for _, ext := range cfg.Extensions {
		srv.Use(ext)
	}
	// Innermost, so that the extensions above see the capped list.
	srv.Use(errorCap{})
	srv.SetValidationRulesFn(cappedRules)
	srv.SetParserTokenLimit(parserTokenLimit)
	srv.SetErrorPresenter(ErrorPresenter)
	recovered := func(ctx context.Context, p any) error {
		cfg.Logger.ErrorContext(ctx, "panic in resolver", "request_id", cfg.RequestID(ctx),
			"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		return errPanic
	}
	srv.SetRecoverFunc(recovered)
	cfg.FetchLimits.recovered = recovered
	h := guardTransport(refuse, requestScope(cfg.RequestTimeout, cfg.RESTPerRequest, cfg.REST, cfg.FetchLimits, srv))
	return ambiguousCredentials(refuse, limitRequest(cfg.MaxBodyBytes, refuse, h)), cache
}

// requestScope gives each request, in one copy of the request: the
// deadline of the whole request (REST calls included); the
// request's own bound on REST calls in flight (perRequest), which the REST
// client's limiter applies to every call made for it; and fresh loaders,
// so that no cache outlives the request. (The caller's pair is already in
// the context: Credentials put it there.)
func requestScope(timeout time.Duration, perRequest int, rest REST, limits *FetchLimits, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		if timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, timeout)
			defer cancel()
		}
		ctx = restclient.WithRequestLimit(ctx, perRequest)
		ctx = context.WithValue(ctx, loadersKey{}, NewLoaders(rest, limits))
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

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
