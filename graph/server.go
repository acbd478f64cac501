package graph

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"

	"paygraph/apqstore"
	"paygraph/graph/admission"
	"paygraph/graph/apq"
	"paygraph/graph/budget"
	"paygraph/graph/customerdata"
	"paygraph/graph/live"
	"paygraph/graph/loaders"
	"paygraph/graph/receipt"
	"paygraph/graph/relay"
	"paygraph/graph/trusted"
	"paygraph/trusteddocs"
)

// The defaults a zero field of ServerConfig takes (so a test's or a tool's
// server is bounded as a deployed one), shown in gateway/config.go's table.
const (
	// DefaultMaxComplexity (MAX_COMPLEXITY): every documented use fits with
	// headroom (a 100-item list with every join is 101 REST calls).
	DefaultMaxComplexity = 500
	DefaultAPQCacheSize  = 1000                       // persisted queries kept in memory
	DefaultAPQCacheBytes = apqstore.DefaultLocalBytes // and their bytes
	// DefaultQueryCacheBytes: parsed documents' estimated heap, a tenth of
	// a pod's GOMEMLIMIT.
	DefaultQueryCacheBytes = 16 << 20
	// QueryLimits' defaults (the gateway derives the last two from its settings).
	DefaultMaxDepth       = 15
	DefaultMaxFields      = 1000
	DefaultMaxQueryLength = 32 << 10
)

// ServerConfig configures the GraphQL server. A zero limit means its
// default, never "no limit" (only a negative MaxResponseBytes turns its
// bound off). HTTP concerns are the gateway's (package gqlhttp).
type ServerConfig struct {
	// TrustedDocuments, when set, is the trusted documents' manifest and
	// mode (graph/trusted); OnTrustedDocument is told each decision.
	TrustedDocuments  *trusteddocs.Store
	OnTrustedDocument func(ctx context.Context, d trusteddocs.Decision)
	// CursorKeys sign pagination cursors (CURSOR_KEYS); nil: a random key
	// for the life of the process.
	CursorKeys *relay.Keys
	// MaxResponseBytes bounds the bytes one response may build (package
	// budget); 0: budget.DefaultMaxResponseBytes, negative: no bound.
	MaxResponseBytes int64
	MaxComplexity    int // refuses operations that may make more REST calls (admission)
	// APQCacheSize and APQCacheBytes bound the persisted queries kept in
	// memory when APQCache is nil.
	APQCacheSize  int
	APQCacheBytes int64
	// APQCache stores automatic persisted queries (a shared store lets one
	// replica serve a hash registered on another); nil: an in-memory LRU.
	// A query is stored only once it passed every limit (graph/apq).
	APQCache graphql.Cache[string]
	// QueryCacheBytes bounds the parsed documents kept, by their estimated
	// heap (admission.QueryCache).
	QueryCacheBytes int64
	Limits          admission.QueryLimits // checked before validation
	Logger          *slog.Logger          // nil: discard
	// RequestID names the request in logs (the access log's id), if any.
	RequestID     func(context.Context) string
	Subscriptions live.Config // serves the Subscription fields; zero: refused
	// Federation serves the subgraph mode (FEDERATION): Payment,
	// PaymentLink and CheckoutSession as Federation 2 entities; false: the
	// contract's schema alone (contractSchema).
	Federation bool
	Extensions []graphql.HandlerExtension // added to the gqlgen server (metrics, tracing)
	Cost       receipt.CostReceipts       // the cost receipts (graph/receipt); zero: none
	// For the differential tests: noFastPath runs gqlgen's executor for every
	// object (fast.go), eagerExec turns lazyQueries off (opstate.go),
	// chainedTail registers graphTail in its place (chainTail,
	// export_test.go).
	noFastPath, eagerExec bool
	chainedTail           func(*handler.Server, graphTail)
}

func (c *ServerConfig) defaults() {
	orDefault(&c.MaxComplexity, DefaultMaxComplexity)
	orDefault(&c.APQCacheSize, DefaultAPQCacheSize)
	orDefault(&c.APQCacheBytes, DefaultAPQCacheBytes)
	orDefault(&c.QueryCacheBytes, DefaultQueryCacheBytes)
	orDefault(&c.Limits.MaxDepth, DefaultMaxDepth)
	orDefault(&c.Limits.MaxFields, DefaultMaxFields)
	orDefault(&c.Limits.MaxQueryLength, DefaultMaxQueryLength)
	c.MaxResponseBytes = cmp.Or(c.MaxResponseBytes, budget.DefaultMaxResponseBytes)
	c.Logger = cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
	if c.RequestID == nil {
		c.RequestID = func(context.Context) string { return "" }
	}
}

// orDefault sets *v to def unless it is above zero.
func orDefault[T int | int64](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// NewServer returns the GraphQL server without transports (gqlhttp adds
// the edge's). LoadersMiddleware must run in front of it.
func NewServer(cfg ServerConfig) *handler.Server {
	srv, _ := newServer(cfg)
	return srv
}

// newServer is NewServer, with its parsed-query cache for tests.
func newServer(cfg ServerConfig) (*handler.Server, *admission.QueryCache) {
	cfg.defaults()
	passThrough, intercepted := interceptors(cfg.Extensions)
	noFast := cfg.noFastPath || !passThrough
	resolver := &Resolver{Cursors: cfg.CursorKeys, Live: cfg.Subscriptions, noFastPath: noFast}
	ec := Config{Resolvers: &resolverRoot{Resolver: resolver, checkoutSession: resolver.CheckoutSession(),
		customer: resolver.Customer(), query: resolver.Query(), subscription: resolver.Subscription()}}
	if !cfg.Federation {
		ec.Schema = contractSchema() // without gqlgen's federation additions
	}
	var es graphql.ExecutableSchema = NewExecutableSchema(ec)
	if !noFast && !cfg.eagerExec {
		es = lazyQueries{es} // opstate.go
	}
	srv := handler.New(es)
	cache := admission.NewQueryCache(cfg.QueryCacheBytes)
	srv.SetQueryCache(cache)
	srv.Use(extension.Introspection{})
	// Before APQ: a listed hash runs the manifest's text, and enforce
	// refuses the rest before the APQ cache or the parser sees it.
	srv.Use(trusted.Documents{Store: cfg.TrustedDocuments, Report: cfg.OnTrustedDocument})
	apqs := cfg.APQCache
	if apqs == nil {
		apqs = apqstore.NewLocal(cfg.APQCacheSize, cfg.APQCacheBytes)
	}
	// APQ only notes a registration (package graph/apq) ...
	srv.Use(apq.Extension{Store: apqs})
	// After APQ, which turns a hash into the query the limits check.
	srv.Use(admission.Limits{QueryLimits: cfg.Limits, MaxComplexity: cfg.MaxComplexity, Cache: cache,
		Receipts: cfg.Cost.Enabled, Inspector: cfg.Cost.Inspector, Caller: admissionCaller, Operation: admissionOperation})
	for _, ext := range cfg.Extensions {
		srv.Use(ext)
	}
	// graphTail does the work of these, inside the others: the APQ
	// registration once every mutator accepted the operation; the cost
	// receipt, response budget and error cap, whose results metrics and
	// traces see; a subscription's error events; the customer-data note;
	// innermost, the root fast path.
	g := graphTail{commit: apq.Commit{Store: apqs}, tail: responseTail{
		cost: receipt.Extension{Config: cfg.Cost, Tally: loaders.Tally}, budget: budget.Limit{MaxBytes: cfg.MaxResponseBytes}}}
	if !noFast && !intercepted {
		g.root = &rootFast{r: resolver}
	}
	if cfg.chainedTail != nil {
		cfg.chainedTail(srv, g)
	} else {
		srv.Use(g)
	}
	srv.SetValidationRulesFn(admission.CappedRules)
	srv.SetParserTokenLimit(admission.ParserTokenLimit)
	srv.SetErrorPresenter(ErrorPresenter)
	// The loaders' fetches, on goroutines of their own, recover with it too.
	srv.SetRecoverFunc(func(ctx context.Context, p any) error {
		cfg.Logger.ErrorContext(ctx, "panic in resolver", "request_id", cfg.RequestID(ctx),
			"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		return loaders.ErrPanic
	})
	return srv, cache
}

// contractSchema is the schema served with the subgraph mode off:
// schema.graphqls without gqlgen's federation additions.
var contractSchema = sync.OnceValue(func() *ast.Schema {
	for _, src := range sources {
		if src.Name == "../schema.graphqls" { // as gqlgen names it
			return gqlparser.MustLoadSchema(src)
		}
	}
	panic("graph: the generated executor has no source ../schema.graphqls")
})

// admissionCaller is what ctx says of its caller, for admission.
func admissionCaller(ctx context.Context) admission.Caller {
	s, ok := scopeIn(ctx)
	return admission.Caller{Scope: s, HasScope: ok, NoAddress: customerdata.WithholdsAddress(customerDataIn(ctx, s, ok))}
}

// admissionOperation is the operation's loaders, which keep what
// admission decided; nil without loaders.
func admissionOperation(ctx context.Context) admission.Operation {
	if l := loaders.From(ctx); l != nil {
		return l
	}
	return nil
}

// PassesBoundFieldsThrough is a field interceptor's promise that for a
// field neither a root field nor resolved by a resolver, InterceptField
// only calls next with the context it got, so the fast path (fast.go) may
// write it without the interceptor. The fast path is on only when every
// graphql.FieldInterceptor in ServerConfig.Extensions makes it.
type PassesBoundFieldsThrough interface {
	graphql.FieldInterceptor
	PassesBoundFieldsThrough()
}

// interceptors reports whether every field interceptor among exts passes
// bound fields through (for the fast path), and whether any intercepts
// fields or root fields (which the root fast path skips).
func interceptors(exts []graphql.HandlerExtension) (passThrough, intercepts bool) {
	passThrough = true
	for _, e := range exts {
		_, field := e.(graphql.FieldInterceptor)
		_, root := e.(graphql.RootFieldInterceptor)
		_, passes := e.(PassesBoundFieldsThrough)
		passThrough = passThrough && (!field || passes)
		intercepts = intercepts || field || root
	}
	return passThrough, intercepts
}

// resolverRoot hands gqlgen the same resolver of each type on every call,
// where the generated Query(), Customer() and the others allocate one per
// root field and per address.
type resolverRoot struct {
	*Resolver
	checkoutSession CheckoutSessionResolver
	customer        CustomerResolver
	query           QueryResolver
	subscription    SubscriptionResolver
}

func (r *resolverRoot) CheckoutSession() CheckoutSessionResolver { return r.checkoutSession }
func (r *resolverRoot) Customer() CustomerResolver               { return r.customer }
func (r *resolverRoot) Query() QueryResolver                     { return r.query }
func (r *resolverRoot) Subscription() SubscriptionResolver       { return r.subscription }
