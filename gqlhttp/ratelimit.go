// The per-merchant rate limit at the /graphql edge (package ratelimit
// decides; this file charges and answers).

package gqlhttp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"sync"

	"github.com/vektah/gqlparser/v2/gqlerror"

	"paygraph/graph"
	"paygraph/internal/opscope"
	"paygraph/ratelimit"
	"paygraph/restclient"
)

// RateLimit charges each /graphql request to its merchant's budgets before
// anything of it is read, and its operation's REST calls before any is
// made:
//
//   - here, one request (Limiter.Allow with no REST calls): a request
//     refused on its merchant's requests budget is answered at once, HTTP
//     429, RATE_LIMITED with extensions.retryAfter, its body unread;
//   - then, through the budget it puts in the request's scope, the
//     operation's REST-call estimate, once graph's query limits accepted
//     the operation (operationCharge, charge.go; Limiter.AllowRESTCalls):
//     a refusal is the operation's error, RATE_LIMITED with
//     extensions.retryAfter, in the transport's usual HTTP 200 (as every
//     GraphQL error of an application/json answer), and no field runs.
//
// Both set the RateLimit, RateLimit-Policy and (when refused) Retry-After
// headers (the second from the response writer, setRateLimitHeaders):
// when both budgets allowed, the one with the smaller share left names the
// RateLimit field.
//
// merchantOf names the request's merchant, never with a secret
// (restclient.Client.Merchant: the keyed HMAC of a credential pair the
// REST API has accepted, which a session token's request carries too once
// its middleware put the pair in the context); it must run after the
// middleware that reads the credentials. A request without a merchant is
// not charged here: the anonymous budgets charge it (anonlimit.go). The
// REST-call estimate of a pair not yet accepted is charged to the pair
// once AdmitUnaccepted admitted its calls (an operation that makes none
// charges none), beside the REST client's bounds on unaccepted pairs.
// onRefused, when set, is told of an edge refusal (the metrics and access
// log count it as a request refused before it was read). A nil Limiter
// charges nothing.
func RateLimit(l *ratelimit.Limiter, merchantOf func(context.Context) (string, bool), onRefused func(ctx context.Context, code string)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if l == nil {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx := r.Context()
			merchant, ok := merchantOf(ctx)
			if r.Method == http.MethodOptions {
				next.ServeHTTP(w, r)
				return
			}
			if !ok {
				// A pair not yet accepted: its request is anonymous, but
				// the REST calls its operation makes, once AdmitUnaccepted
				// lets them go, are charged to the pair as a merchant's.
				if pair, has := restclient.MerchantOf(ctx); has {
					next.ServeHTTP(w, opscope.Request(r, withBudget(ctx, &restCallBudget{l: l, merchant: pair})))
					return
				}
				next.ServeHTTP(w, r)
				return
			}
			d := l.Allow(ctx, merchant, 0)
			d.SetHeaders(w.Header())
			if !d.Allowed {
				if onRefused != nil {
					onRefused(ctx, graph.CodeRateLimited)
				}
				drain(r)
				writeRateLimited(w, r, d)
				return
			}
			b := &restCallBudget{l: l, merchant: merchant, edge: d}
			next.ServeHTTP(w, opscope.Request(r, withBudget(ctx, b)))
		})
	}
}

// restCallBudget charges one request's operation to its merchant.
type restCallBudget struct {
	l        *ratelimit.Limiter
	merchant string
	edge     ratelimit.Decision // the request's own charge, for the headers
	mu       sync.Mutex
	rest     ratelimit.Decision // the operation's REST-call charge, for its receipt and headers
	charged  bool               // rest is set
	restSet  bool               // the headers are a REST-call charge's, not edge's (setHeaders)
}

var _ budget = (*restCallBudget)(nil)

func (b *restCallBudget) charge(ctx context.Context, restCalls int) *gqlerror.Error {
	d := b.l.AllowRESTCalls(ctx, b.merchant, restCalls)
	b.mu.Lock()
	b.rest, b.charged = d, true
	b.mu.Unlock()
	return restCallsRefusal(d, restCalls)
}

// setHeaders sets the headers of the request's decisions: after an
// operation's charge, the tighter of the two. When that is the edge's,
// which RateLimit set already (and no operation's charge replaced since),
// the headers are left as they are: the same lines, not written again.
func (b *restCallBudget) setHeaders(h http.Header) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.charged {
		return
	}
	if !restTighter(b.edge, b.rest) {
		if b.restSet {
			b.edge.SetHeaders(h)
			b.restSet = false
		}
		return
	}
	b.rest.SetHeaders(h)
	b.restSet = true
}

// OperationBudget is the rate limit of the operations that do not come one
// an HTTP request through RateLimit: each operation of a WebSocket
// connection (whose upgrade was one request) is charged, to the merchant
// of its own context (credentials from the upgrade's headers, the
// connection_init payload or a session token alike), one request and then
// its REST-call estimate, refused as RateLimit's second step refuses
// (RATE_LIMITED with extensions.retryAfter, no field run). There are no
// response headers to set. An operation of a pair not yet accepted
// (merchantOf false, as RateLimit's) is anonymous: it is charged one
// request of anonymous, the replica's shared anonymous budget (nil: none),
// refused as AnonymousRateLimit refuses, and then its REST-call estimate
// to its pair. Nil when l is nil.
func OperationBudget(l *ratelimit.Limiter, merchantOf func(context.Context) (string, bool), anonymous *ratelimit.Limiter) *ConnectionBudget {
	if l == nil {
		return nil
	}
	return &ConnectionBudget{l: l, merchantOf: merchantOf, anonymous: anonymous}
}

// ConnectionBudget is OperationBudget's: the budget of every operation of
// a WebSocket connection (Live.Budget).
type ConnectionBudget struct {
	l          *ratelimit.Limiter
	merchantOf func(context.Context) (string, bool)
	anonymous  *ratelimit.Limiter
}

var _ budget = (*ConnectionBudget)(nil)

// left: an operation of a connection has no charge of its own to report
// (its receipt carries no budget).
func (*ConnectionBudget) left() (graph.BudgetLeft, bool) { return graph.BudgetLeft{}, false }

// peek is a dry run's check, charging nothing.
func (b *ConnectionBudget) peek(ctx context.Context, restCalls int) (graph.BudgetLeft, *gqlerror.Error, bool) {
	merchant, ok := b.merchantOf(ctx)
	if !ok {
		if merchant, ok = restclient.MerchantOf(ctx); !ok {
			return graph.BudgetLeft{}, nil, false
		}
	}
	d := b.l.PeekRESTCalls(ctx, merchant, restCalls)
	return budgetLeft(d), restCallsRefusal(d, restCalls), d.Policy == ratelimit.PolicyRESTCalls
}

func (b *ConnectionBudget) charge(ctx context.Context, restCalls int) *gqlerror.Error {
	if merchant, ok := b.merchantOf(ctx); ok {
		return restCallsRefusal(b.l.Allow(ctx, merchant, restCalls), restCalls)
	}
	pair, ok := restclient.MerchantOf(ctx)
	if !ok {
		return nil // no REST call can be made
	}
	if b.anonymous != nil {
		if d := b.anonymous.Allow(ctx, anonymousKey, 0); !d.Allowed {
			err := gqlerror.Errorf("rate limit reached: requests %s share a budget and have spent it; retry after %d s", anonymousWho(ctx), d.RetryAfterSeconds())
			err.Extensions = map[string]any{"code": graph.CodeRateLimited, "retryAfter": d.RetryAfterSeconds()}
			return err
		}
	}
	return restCallsRefusal(b.l.AllowRESTCalls(ctx, pair, restCalls), restCalls)
}

// left is what the operation's charge left of the merchant's
// REST-call budget (the RateLimit header's figure when it names that
// budget); ok false when nothing was charged.
func (b *restCallBudget) left() (graph.BudgetLeft, bool) {
	b.mu.Lock()
	d := b.rest
	b.mu.Unlock()
	if d.Policy != ratelimit.PolicyRESTCalls {
		return graph.BudgetLeft{}, false
	}
	return budgetLeft(d), true
}

// peek is a dry run's check: what charge would answer, charging nothing.
func (b *restCallBudget) peek(ctx context.Context, restCalls int) (graph.BudgetLeft, *gqlerror.Error, bool) {
	d := b.l.PeekRESTCalls(ctx, b.merchant, restCalls)
	return budgetLeft(d), restCallsRefusal(d, restCalls), d.Policy == ratelimit.PolicyRESTCalls
}

func budgetLeft(d ratelimit.Decision) graph.BudgetLeft {
	return graph.BudgetLeft{Remaining: d.Remaining, Limit: d.Limit, ResetSeconds: int(math.Ceil(d.Reset.Seconds()))}
}

// restCallsRefusal is the operation's error when d refused restCalls.
func restCallsRefusal(d ratelimit.Decision, restCalls int) *gqlerror.Error {
	switch {
	case d.TooCostly:
		// Unreachable with the gateway's settings (MAX_COMPLEXITY is at
		// most RATE_LIMIT_REST_BURST); no wait would admit it.
		err := gqlerror.Errorf("query may make %d REST calls, more than this merchant's rate limit admits at once (%d)", restCalls, d.Limit)
		err.Extensions = map[string]any{"code": graph.CodeComplexityLimit}
		return err
	case !d.Allowed:
		err := gqlerror.Errorf("%s", limitedMessage(d))
		err.Extensions = map[string]any{"code": graph.CodeRateLimited, "retryAfter": d.RetryAfterSeconds()}
		return err
	}
	return nil
}

// tighter is the decision the headers describe: a refusal, else the
// budget with the smaller share left (a decision without a policy charged
// nothing).
func tighter(edge, rest ratelimit.Decision) ratelimit.Decision {
	if restTighter(edge, rest) {
		return rest
	}
	return edge
}

// restTighter reports whether tighter is rest.
func restTighter(edge, rest ratelimit.Decision) bool {
	switch {
	case !rest.Allowed || edge.Policy == "":
		return true
	case rest.Policy == "":
		return false
	}
	return int64(rest.Remaining)*int64(edge.Limit) < int64(edge.Remaining)*int64(rest.Limit)
}

func limitedMessage(d ratelimit.Decision) string {
	what := "requests"
	if d.Policy == ratelimit.PolicyRESTCalls {
		what = "REST calls"
	}
	return fmt.Sprintf("rate limit reached: this merchant has spent its %s budget; retry after %d s", what, d.RetryAfterSeconds())
}

// maxDrain is how much of a refused request's body is read (and thrown
// away, never decoded) before the answer: net/http's own bound for the
// same purpose (maxPostHandlerReadBytes). A body left unread is in the
// socket when a Connection: close request's connection is closed, and the
// kernel then resets it, so the client may lose the 429 itself
// (TestHostileClients' 300 connections saw 7 such failures without it).
const maxDrain = 256 << 10

func drain(r *http.Request) {
	if r.Body != nil && r.Body != http.NoBody {
		_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, maxDrain))
	}
}

// writeRateLimited answers an edge refusal: HTTP 429 with a GraphQL-shaped
// body (the headers are set already).
func writeRateLimited(w http.ResponseWriter, r *http.Request, d ratelimit.Decision) {
	body, _ := json.Marshal(map[string]any{"errors": []any{map[string]any{
		"message":    limitedMessage(d),
		"extensions": map[string]any{"code": graph.CodeRateLimited, "retryAfter": d.RetryAfterSeconds()},
	}}})
	setContentType(w, r) // as any GraphQL answer: what the caller's Accept prefers
	w.WriteHeader(http.StatusTooManyRequests)
	_, _ = w.Write(body)
}
