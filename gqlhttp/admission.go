package gqlhttp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/vektah/gqlparser/v2/gqlerror"

	"paygraph/graph/errcode"
	"paygraph/internal/opscope"
	"paygraph/ratelimit"
	"paygraph/restclient"
)

// The budgets a refusal names (the access line's refused_by).
const (
	BudgetMerchant          = "merchant"            // the merchant's requests
	BudgetAnonymousAddress  = "anonymous_address"   // one client address's anonymous requests
	BudgetAnonymous         = "anonymous"           // the replica's shared anonymous requests
	BudgetMerchantRESTCalls = "merchant_rest_calls" // an operation's: its merchant's REST calls
	BudgetUnaccepted        = "unaccepted"          // an operation's: pairs not yet accepted
)

// Refusal is what the admission step reports of each refusal.
type Refusal struct {
	Code     string // the error's code
	Budget   string // the budget that refused (Budget...)
	Answered bool   // the request was answered 429, not one operation refused
}

// anonymousKey is the one key of the anonymous budget in its own Limiter.
const anonymousKey = "anonymous"

// AdmissionConfig is what the admission step is made of; a nil limiter charges nothing.
type AdmissionConfig struct {
	Merchants        *ratelimit.Limiter // each merchant's requests and REST calls
	AnonymousAddress *ratelimit.Limiter // each client address's anonymous requests
	Anonymous        *ratelimit.Limiter // shared by every anonymous request of the replica
	TrustedProxies   []netip.Prefix
	Merchant         func(context.Context) (string, bool) // the one decision of who is a merchant (a pair the REST API accepted)
	Admit            func(context.Context) error          // would an unaccepted pair's first REST call be refused? nil: not asked
	Delay            *RefusalDelay                        // holds the refusals of all but accepted merchants; nil: none
	OnRefused        func(ctx context.Context, r Refusal) // told of each refusal, of a request or an operation
}

// Admission is the admission step: one decision per request (who, which budget
// refused), one refusal path, its operations' budgets (ratelimit.go).
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

// Middleware, after the credential readers, charges each /graphql request
// before its body is read: a merchant's to its budget (RateLimit headers), an
// anonymous one to its address's (not an upgrade's) then the shared budget; a
// refusal is answered 429 RATE_LIMITED, an allowed request carries its
// operation's REST-call budget. Preflights pass.
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

// decide charges a request to c's budgets (a merchant's RateLimit headers in h): the refusing one, or "".
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

// budgetFor is c's REST-call budget (nil: none), charged edge: the merchant's;
// a pair's, Admit first.
func (a *Admission) budgetFor(c caller, edge ratelimit.Decision) *restCallBudget {
	merchant, admit := "", c.pair && a.c.Admit != nil
	if a.c.Merchants != nil {
		merchant = c.key
	}
	if merchant == "" && !admit {
		return nil
	}
	return &restCallBudget{a: a, merchant: merchant, admit: admit, edge: edge}
}

// refuse is a request's one refusal path: reported, held unless a merchant's,
// body drained, 429 with Retry-After.
func (a *Admission) refuse(w http.ResponseWriter, r *http.Request, c caller, d ratelimit.Decision, budget string) {
	ctx := r.Context()
	a.report(ctx, Refusal{Code: errcode.RateLimited, Budget: budget, Answered: true})
	if !c.merchant {
		markRefused(ctx, time.Duration(d.RetryAfterSeconds())*time.Second)
	}
	// A body left unread when the connection closes makes the kernel reset
	// it, losing the 429: drain as much as net/http would (maxPostHandlerReadBytes).
	if r.Body != nil && r.Body != http.NoBody {
		_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 256<<10))
	}
	if w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", fmt.Sprint(d.RetryAfterSeconds()))
	}
	body, _ := json.Marshal(map[string]any{"errors": []*gqlerror.Error{refusalError(ctx, budget, d)}})
	setContentType(w, r) // as any GraphQL answer: what the caller's Accept prefers
	w.WriteHeader(http.StatusTooManyRequests)
	_, _ = w.Write(body)
}

func (a *Admission) report(ctx context.Context, r Refusal) {
	if a != nil && a.c.OnRefused != nil {
		a.c.OnRefused(ctx, r)
	}
}

// operationRefused reports err, if any, as an operation's refusal by budget.
func (a *Admission) operationRefused(ctx context.Context, budget string, err *gqlerror.Error) *gqlerror.Error {
	if err != nil {
		code, _ := err.Extensions["code"].(string)
		a.report(ctx, Refusal{Code: code, Budget: budget})
	}
	return err
}

// refusalError is the error of a refusal by budget (d), at the edge or of an operation.
func refusalError(ctx context.Context, budget string, d ratelimit.Decision) *gqlerror.Error {
	who := "without credentials" // the anonymous requests
	if _, ok := restclient.CredentialsFrom(ctx); ok {
		who = "with credentials the REST API has not accepted yet"
	}
	spent := "this merchant has spent its requests budget"
	switch {
	case budget == BudgetAnonymousAddress:
		spent = "requests " + who + " from this address have spent its budget"
	case budget == BudgetAnonymous:
		spent = "requests " + who + " share a budget and have spent it"
	case d.Policy == ratelimit.PolicyRESTCalls:
		spent = "this merchant has spent its REST calls budget"
	}
	return &gqlerror.Error{Message: fmt.Sprintf("rate limit reached: %s; retry after %d s", spent, d.RetryAfterSeconds()),
		Extensions: map[string]any{"code": errcode.RateLimited, "retryAfter": d.RetryAfterSeconds()}}
}

// OperationBudget is the budget of each WebSocket operation (nil without
// Merchants), charged to its caller: a merchant's one request and REST-call
// estimate; an unaccepted pair's one request of the shared anonymous budget,
// then its estimate. A refusal is the operation's error.
func (a *Admission) OperationBudget() *ConnectionBudget {
	if a.c.Merchants == nil {
		return nil
	}
	return &ConnectionBudget{a: a}
}

// ClientAddress is the middleware that puts the caller's address, to whose
// budget the REST client charges an unaccepted pair's calls, in the context.
func ClientAddress(trusted []netip.Prefix, accepted func(context.Context) bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !accepted(r.Context()) {
				r = opscope.Request(r, restclient.WithClientAddr(r.Context(), ClientAddr(r, trusted)))
			}
			next.ServeHTTP(w, r)
		})
	}
}

// ClientAddr is the caller's address (zero if RemoteAddr is none): the peer,
// unless a trusted proxy; then X-Forwarded-For's rightmost that is not (the
// client writes the leftmost).
func ClientAddr(r *http.Request, trusted []netip.Prefix) netip.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	addr := ap.Addr().Unmap()
	if !isTrusted(addr, trusted) {
		return addr
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			return addr // unreadable: the last address known good
		}
		addr = a.Unmap()
		if !isTrusted(addr, trusted) {
			return addr
		}
	}
	return addr
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	return slices.ContainsFunc(trusted, func(p netip.Prefix) bool { return p.Contains(a) })
}
