// The admission step at the /graphql edge: who the caller is (a merchant
// the REST API accepted, or anonymous), which budget a request is charged
// to, and the one refusal path (package ratelimit decides each budget;
// this file decides which one and answers).

package gqlhttp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"paygraph/graph/errcode"
	"time"

	"github.com/vektah/gqlparser/v2/gqlerror"

	"paygraph/internal/opscope"
	"paygraph/ratelimit"
	"paygraph/restclient"
)

// The budgets a refusal names (the access line's refused_by).
const (
	BudgetMerchant         = "merchant"          // the merchant's requests
	BudgetAnonymousAddress = "anonymous_address" // one client address's anonymous requests
	BudgetAnonymous        = "anonymous"         // the replica's shared anonymous requests
	// An operation's: its merchant's REST calls, and the bounds on pairs
	// the REST API has not accepted (restclient.Client.Admit).
	BudgetMerchantRESTCalls = "merchant_rest_calls"
	BudgetUnaccepted        = "unaccepted"
)

// Refusal is what the admission step reports of each refusal.
type Refusal struct {
	Code   string // the error's code
	Budget string // the budget that refused (Budget...)
	// Answered: the step answered the request itself (HTTP 429, nothing
	// of it read); false for an operation's refusal, which is the
	// operation's error, counted with its operation.
	Answered bool
}

// anonymousKey is the one key of the anonymous budget in its own Limiter.
const anonymousKey = "anonymous"

// AdmissionConfig is what the admission step is made of, set once at
// start. Every limiter may be nil: that budget charges nothing.
type AdmissionConfig struct {
	// Merchants holds each merchant's requests and REST calls (keyed by
	// Merchant's name, or the pair's for a pair not yet accepted).
	Merchants *ratelimit.Limiter
	// AnonymousAddress holds each client address's anonymous requests
	// (ClientAddr's address behind TrustedProxies, keyed as
	// restclient.AddressKey); kept in this process's memory only.
	AnonymousAddress *ratelimit.Limiter
	// Anonymous is the one budget every anonymous request of the replica
	// shares.
	Anonymous      *ratelimit.Limiter
	TrustedProxies []netip.Prefix
	// Merchant is the one decision of who is a merchant
	// (restclient.Client.Merchant: a pair the REST API accepted); a
	// request it names no merchant for is anonymous for every budget.
	Merchant func(context.Context) (string, bool)
	// Admit (restclient.Client.Admit) is asked, once an operation of a
	// pair not yet accepted is known to make REST calls, whether its
	// first call would be refused; nil asks nothing.
	Admit func(context.Context) error
	// Delay holds the refusals of callers that are not accepted
	// merchants; nil answers them at once.
	Delay *RefusalDelay
	// OnRefused is told of each refusal, of a request or an operation.
	OnRefused func(ctx context.Context, r Refusal)
}

// Admission is the admission step: one decision per request (merchant or
// anonymous; which budget; allowed, or refused by which budget), one
// refusal path (refuse), and the operation-level REST-call budgets it
// puts in the request's scope (charge.go) or gives a WebSocket's
// operations (OperationBudget), which ask the same decision.
type Admission struct{ c AdmissionConfig }

// NewAdmission returns the admission step of c.
func NewAdmission(c AdmissionConfig) *Admission { return &Admission{c: c} }

// caller is the decision of who a request or an operation is.
type caller struct {
	key      string // the merchant's name, or the unaccepted pair's
	merchant bool   // a merchant the REST API accepted
	pair     bool   // a credential pair not yet accepted (anonymous)
}

func (a *Admission) callerOf(ctx context.Context) caller {
	if m, ok := a.c.Merchant(ctx); ok {
		return caller{key: m, merchant: true}
	}
	if p, ok := restclient.MerchantOf(ctx); ok {
		return caller{key: p, pair: true}
	}
	return caller{}
}

// Middleware charges each /graphql request, before anything of it is
// read, to one budget: a merchant's to its requests budget (its RateLimit
// headers set, allowed or not); an anonymous request (no credentials, a
// session token or pair the REST API has not accepted) to its client
// address's budget, then to the replica's shared one, so that one address
// refused spends nothing of what others share. A refusal is answered at
// once (refuse): HTTP 429, RATE_LIMITED with extensions.retryAfter, its
// body unread. Allowed, the request carries its operation's REST-call
// budget in its scope (charge.go): the merchant's; a pair not yet
// accepted is charged its REST calls as a merchant, once Admit let them
// go. Preflights pass uncharged; a WebSocket upgrade is not charged to
// its address (a browser cannot set headers on it, so an office's
// dashboards behind one NAT address would spend it; its operations are
// charged one by one, OperationBudget). It must run after the middleware
// that reads the credentials, and inside whatever fills in the request's
// scope.
func (a *Admission) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w, r = a.c.Delay.wrap(w, r)
		if r.Method == http.MethodOptions {
			next.ServeHTTP(w, r)
			return
		}
		ctx := r.Context()
		c := a.callerOf(ctx)
		d, refusedBy := a.decide(ctx, r, w.Header(), c)
		if refusedBy != "" {
			a.refuse(w, r, c, d, refusedBy)
			return
		}
		if b := a.budgetFor(c, d); b != nil {
			r = opscope.Request(r, withBudget(ctx, b))
		}
		next.ServeHTTP(w, r)
	})
}

// decide charges one request to c's budgets: the decision to report, and
// the budget that refused it ("" allowed). A merchant's decision sets its
// RateLimit headers in h.
func (a *Admission) decide(ctx context.Context, r *http.Request, h http.Header, c caller) (ratelimit.Decision, string) {
	if c.merchant {
		if a.c.Merchants == nil {
			return ratelimit.Decision{}, ""
		}
		d := a.c.Merchants.Allow(ctx, c.key, 0)
		d.SetHeaders(h)
		if !d.Allowed {
			return d, BudgetMerchant
		}
		return d, ""
	}
	if a.c.AnonymousAddress != nil && !isWebsocket(r) {
		if d := a.c.AnonymousAddress.Allow(ctx, restclient.AddressKey(ClientAddr(r, a.c.TrustedProxies)), 0); !d.Allowed {
			return d, BudgetAnonymousAddress
		}
	}
	if a.c.Anonymous != nil {
		if d := a.c.Anonymous.Allow(ctx, anonymousKey, 0); !d.Allowed {
			return d, BudgetAnonymous
		}
	}
	return ratelimit.Decision{}, ""
}

// budgetFor is the operation's REST-call budget of an allowed request of
// c, whose own charge was edge: the merchant's; for a pair not yet
// accepted, Admit's check before its pair's charge.
func (a *Admission) budgetFor(c caller, edge ratelimit.Decision) budget {
	var b budget
	if a.c.Merchants != nil && c.key != "" {
		b = &restCallBudget{a: a, merchant: c.key, edge: edge}
	}
	if c.pair && a.c.Admit != nil {
		b = admitBudget{a: a, next: b}
	}
	return b
}

// refuse is the one refusal path of a request: reported with its budget,
// marked for the refusal delay to hold unless the caller is an accepted
// merchant (whose own 429s stay immediate), its body drained, and
// answered HTTP 429 with Retry-After (and a merchant's RateLimit headers,
// set by decide).
func (a *Admission) refuse(w http.ResponseWriter, r *http.Request, c caller, d ratelimit.Decision, budget string) {
	ctx := r.Context()
	a.report(ctx, Refusal{Code: errcode.RateLimited, Budget: budget, Answered: true})
	if !c.merchant {
		markRefused(ctx, time.Duration(d.RetryAfterSeconds())*time.Second)
	}
	drain(r)
	if w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", fmt.Sprint(d.RetryAfterSeconds()))
	}
	body, _ := json.Marshal(map[string]any{"errors": []*gqlerror.Error{refusalError(ctx, budget, d)}})
	setContentType(w, r) // as any GraphQL answer: what the caller's Accept prefers
	w.WriteHeader(http.StatusTooManyRequests)
	_, _ = w.Write(body)
}

// report tells OnRefused of r.
func (a *Admission) report(ctx context.Context, r Refusal) {
	if a != nil && a.c.OnRefused != nil {
		a.c.OnRefused(ctx, r)
	}
}

// operationRefused reports err, an operation's refusal by budget, if it
// is one, and returns it.
func (a *Admission) operationRefused(ctx context.Context, budget string, err *gqlerror.Error) *gqlerror.Error {
	if err != nil {
		code, _ := err.Extensions["code"].(string)
		a.report(ctx, Refusal{Code: code, Budget: budget})
	}
	return err
}

// refusalError is the error of a refusal by budget (d): the edge's answer
// and a WebSocket operation's alike.
func refusalError(ctx context.Context, budget string, d ratelimit.Decision) *gqlerror.Error {
	var msg string
	switch budget {
	case BudgetAnonymousAddress:
		msg = fmt.Sprintf("rate limit reached: requests %s from this address have spent its budget; retry after %d s", anonymousWho(ctx), d.RetryAfterSeconds())
	case BudgetAnonymous:
		msg = fmt.Sprintf("rate limit reached: requests %s share a budget and have spent it; retry after %d s", anonymousWho(ctx), d.RetryAfterSeconds())
	default:
		msg = limitedMessage(d)
	}
	return &gqlerror.Error{Message: msg, Extensions: map[string]any{"code": errcode.RateLimited, "retryAfter": d.RetryAfterSeconds()}}
}

// anonymousWho names the anonymous requests in a refusal's message.
func anonymousWho(ctx context.Context) string {
	if _, ok := restclient.CredentialsFrom(ctx); ok {
		return "with credentials the REST API has not accepted yet"
	}
	return "without credentials"
}

// OperationBudget is the budget of the operations that do not come one an
// HTTP request through Middleware: each operation of a WebSocket
// connection (whose upgrade was one request), charged by the same
// decision (callerOf) to the caller of its own context (credentials from
// the upgrade's headers, the connection_init payload or a session token
// alike). A merchant's is charged one request and then its REST-call
// estimate; an operation of a pair not yet accepted one request of the
// shared anonymous budget, then its REST-call estimate to its pair. A
// refusal is the operation's error (refusalError, restCallsRefusal), no
// field run; there are no response headers to set. Nil without a
// Merchants limiter.
func (a *Admission) OperationBudget() *ConnectionBudget {
	if a.c.Merchants == nil {
		return nil
	}
	return &ConnectionBudget{a: a}
}
