// Package ratelimit decides, before any REST call is made, whether one
// merchant may run one more GraphQL request, so that no merchant (or one
// buggy app release) can spend the REST API's capacity that the others
// behind the same gateway fleet need.
//
// # Two budgets per merchant
//
// Each merchant has two GCRA (generic cell rate algorithm, a token bucket
// kept as one timestamp) budgets: REST calls, the cost that matters to the
// REST API (a request's cost is its complexity, counted in REST calls), and
// requests, which bounds the work a merchant can cause with requests that
// make no REST call (introspection, refused or failing ones). A request is
// charged one request first and its REST calls second: a request refused
// on requests spends no REST calls, and one refused on REST calls still
// counts as a request (it arrived and was answered).
//
// # Settings (the composition root reads them; the defaults are here)
//
//	RATE_LIMIT_REST_CALLS_PER_SECOND  200   sustained REST calls per second per merchant (0: no REST-calls limit)
//	RATE_LIMIT_REST_BURST             1000  REST calls a merchant may spend at once (0: no REST-calls limit)
//	RATE_LIMIT_REQUESTS_PER_SECOND    200   sustained requests per second per merchant (0: no requests limit)
//	RATE_LIMIT_REQUESTS_BURST         400   requests a merchant may send at once (0: no requests limit)
//
// Why these defaults: the documented heavy use, a 100-item page with every
// join, costs about 101 REST calls, so 200 calls/s lets one merchant page
// through two such lists a second, or make 200 single lookups a second,
// without ever being refused. The burst is twice MAX_COMPLEXITY's 500: any
// operation the complexity limit admits fits in a full bucket (an operation
// that costs more than the burst is refused as TooCostly, since no wait
// would make it fit; keep MAX_COMPLEXITY at or below the burst), and about
// ten fully joined 100-item lists can run back to back. The requests rate
// equals the REST-calls rate, so that a request making one REST call meets
// the REST-calls limit first; the requests limit binds only requests that
// make no REST call, and at 200/s such requests cost a replica about 3 % of
// one core (0.14 CPU-s per 1,000 queries, docs/perf-log/2026-11-benchmarks.md). All four are per
// merchant for the whole fleet when Redis is used. The REST API does not
// publish its own limits: when its owners give one, set these below it.
//
// # Shared through Redis, local without it
//
// With a Redis client, every replica charges the same budget in Redis
// through github.com/go-redis/redis_rate/v10 (v10.0.1), a small, well-known
// GCRA on go-redis v9 (the client the project already uses): one EVALSHA of
// a reviewed Lua script per budget, atomic in Redis, Redis's own clock for
// every replica, keys that expire when they carry no state. Writing our own
// Lua would mean owning that script and its edge cases.
//
// Without Redis the budgets are kept in memory by a GCRA with the same
// arithmetic (so the figures in headers read the same from both), in a map
// with bounded memory: an entry whose budget is full again carries no
// state and is dropped first, and the map never holds more than
// LocalMaxMerchants entries, about 120 bytes each (when it is full and nothing is idle, the
// entries closest to full are dropped, which gives those merchants at most
// the rest of their burst early).
//
// Redis is a shared counter, never a dependency: each Redis call has a
// short deadline (50 ms by default; the client must have
// ContextTimeoutEnabled so that the deadline reaches its sockets), and on
// any error or timeout the request is decided by the local budgets
// instead, so no request fails because of Redis. Redis is then left alone
// for a backoff (1 s); after it, one request at a time probes Redis again,
// and the first success goes back to the shared budgets. During an outage
// each replica applies the full limits on its own, so the fleet admits up
// to replicas × the limits.
//
// # Headers
//
// Decision.SetHeaders writes the RateLimit and RateLimit-Policy fields of
// draft-ietf-httpapi-ratelimit-headers-11 (May 2026: both fields are
// Structured Field Lists of String items with parameters; policy q, w,
// service limit r, t), and Retry-After when a request is refused. A GCRA of
// rate R and burst B is advertised as q=B per w=ceil(B/R) seconds (the
// sustained rate, never more). REST calls are not a registered quota unit
// (the draft's registry has requests, content-bytes, concurrent-requests),
// so that policy names its unit in a vendor parameter, paygraph-unit.
//
// The merchant key is an opaque value the caller derives (a hash of the
// credential pair, or a session token's merchant), never a secret; it is
// stored in Redis keys and in memory, and never reaches OnDecision.
package ratelimit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// Defaults of the settings (see the package comment for why).
const (
	DefaultRESTCallsPerSecond = 200
	DefaultRESTBurst          = 1000
	DefaultRequestsPerSecond  = 200
	DefaultRequestsBurst      = 400
	// The anonymous requests' budget (no credential pair, no session
	// token), one a replica: a tenth of one merchant's, enough for a
	// developer's GraphiQL or codegen introspection, small enough that
	// anonymous senders cannot take a merchant's CPU (issue 22).
	DefaultAnonymousPerSecond = 20
	DefaultAnonymousBurst     = 40
	// One client address's part of it (IPv6 by /64), charged first: a
	// person in GraphiQL sends a document every few seconds, and a
	// codegen tool's introspection at start-up is one to a few documents,
	// which the burst admits at once; one address flooding gets 2 a
	// second and leaves the shared budget to the others (issue 22).
	DefaultAnonymousPerAddressPerSecond = 2
	DefaultAnonymousPerAddressBurst     = 10

	DefaultRedisTimeout      = 50 * time.Millisecond
	DefaultRedisBackoff      = time.Second
	DefaultLocalMaxMerchants = 10000

	// MaxMerchantBytes is the longest merchant key kept as given; longer
	// ones are replaced by their SHA-256, so that a caller's key cannot
	// make an entry (or a Redis key) large.
	MaxMerchantBytes = 128
)

// Policy names, as they appear in Decision.Policy and the headers.
const (
	PolicyRequests  = "requests"
	PolicyRESTCalls = "rest-calls"
)

// Backends, as they appear in Decision.Backend.
const (
	BackendRedis = "redis"
	BackendLocal = "local"
)

// Outcomes handed to Config.OnDecision, one per Allow.
const (
	OutcomeAllowed         = "allowed"          // allowed by the shared (or only) budgets
	OutcomeLimited         = "limited"          // refused; retry after Decision.RetryAfter
	OutcomeFallbackAllowed = "fallback_allowed" // Redis failed or is in backoff: allowed by the local budgets
	OutcomeFallbackLimited = "fallback_limited" // Redis failed or is in backoff: refused by the local budgets
	OutcomeTooCostly       = "too_costly"       // costs more REST calls than the burst: never allowed
)

// Config holds the limits and the Redis behaviour. Its zero value disables
// both limits; DefaultConfig returns the defaults.
type Config struct {
	// RESTCallsPerSecond is the sustained REST calls per second per
	// merchant. Zero disables the REST-calls limit.
	RESTCallsPerSecond int
	// RESTBurst is how many REST calls a merchant with an unused budget
	// may spend at once. Zero disables the REST-calls limit.
	RESTBurst int
	// RequestsPerSecond is the sustained requests per second per merchant.
	// Zero disables the requests limit.
	RequestsPerSecond int
	// RequestsBurst is how many requests a merchant may send at once. Zero
	// disables the requests limit.
	RequestsBurst int

	// Redis, when not nil, holds the budgets shared by all replicas. A
	// *redis.Client must have ContextTimeoutEnabled (New checks it). The
	// Limiter does not close it.
	Redis redis.UniversalClient
	// RedisTimeout bounds one Allow's Redis calls. If zero, 50 ms.
	RedisTimeout time.Duration
	// RedisBackoff is how long Redis is left alone after a failure. If
	// zero, 1 s.
	RedisBackoff time.Duration
	// LocalMaxMerchants caps the merchants the local budgets hold. If
	// zero, 10000 (about 1.2 MB, measured by TestLocalMemoryBound).
	LocalMaxMerchants int

	// OnDecision, when not nil, is called once per Allow with one of the
	// Outcome constants (never a merchant), for metrics.
	OnDecision func(outcome string)
	// OnJunk, when not nil, is called for each budget read back from
	// Redis that redis_rate could not have written (it is then reset).
	OnJunk func()
	// Logger, when not nil, gets one line when Redis becomes unavailable
	// and one when it is back (never one per request).
	Logger *slog.Logger
}

// DefaultConfig returns the default limits, without Redis.
func DefaultConfig() Config {
	return Config{
		RESTCallsPerSecond: DefaultRESTCallsPerSecond, RESTBurst: DefaultRESTBurst,
		RequestsPerSecond: DefaultRequestsPerSecond, RequestsBurst: DefaultRequestsBurst,
	}
}

// limit is one budget: a GCRA of rate per second and burst.
type limit struct {
	policy string
	rate   int
	burst  int
	t      int64 // emission interval: nanoseconds per unit, rounded up (never faster than rate)
	tau    int64 // t × burst: how far ahead of now the budget may be spent
}

func newLimit(policy string, rate, burst int) limit {
	t := (int64(time.Second) + int64(rate) - 1) / int64(rate)
	return limit{policy: policy, rate: rate, burst: burst, t: t, tau: t * int64(burst)}
}

func (l limit) enabled() bool { return l.rate > 0 }

// redisLimit is the same budget in redis_rate's terms.
func (l limit) redisLimit() redis_rate.Limit {
	return redis_rate.Limit{Rate: l.rate, Burst: l.burst, Period: time.Second}
}

// policyItem is the limit's item of the RateLimit-Policy field.
func (l limit) policyItem() string {
	w := max(1, (l.burst+l.rate-1)/l.rate) // ceil(burst/rate) seconds, at least 1
	s := strconv.Quote(l.policy) + ";q=" + strconv.Itoa(l.burst) + ";w=" + strconv.Itoa(w)
	if l.policy == PolicyRESTCalls {
		s += `;paygraph-unit="rest-calls"`
	}
	return s
}

// Limiter decides per merchant. It is safe for concurrent use.
type Limiter struct {
	req, rest   limit
	policies    string // the RateLimit-Policy field value, the same on every response
	local       *localStore
	rdb         *redis_rate.Limiter
	timeout     time.Duration
	backoff     time.Duration
	onDecision  func(string)
	onJunk      func()
	logger      *slog.Logger
	downUntil   atomic.Int64 // unix nanoseconds: Redis is left alone until then; 0: healthy
	down        atomic.Bool  // for logging the transitions only
	redisErrors atomic.Uint64
}

// New returns a Limiter for cfg.
func New(cfg Config) (*Limiter, error) {
	for _, f := range []struct {
		name string
		v    int
	}{
		{"RATE_LIMIT_REST_CALLS_PER_SECOND", cfg.RESTCallsPerSecond}, {"RATE_LIMIT_REST_BURST", cfg.RESTBurst},
		{"RATE_LIMIT_REQUESTS_PER_SECOND", cfg.RequestsPerSecond}, {"RATE_LIMIT_REQUESTS_BURST", cfg.RequestsBurst},
		{"LocalMaxMerchants", cfg.LocalMaxMerchants},
	} {
		if f.v < 0 || f.v > 1e9 {
			return nil, fmt.Errorf("ratelimit: %s must be between 0 and 1e9, not %d", f.name, f.v)
		}
	}
	if cfg.RedisTimeout < 0 || cfg.RedisBackoff < 0 {
		return nil, errors.New("ratelimit: negative Redis timeout or backoff")
	}
	l := &Limiter{
		timeout: cmpOr(cfg.RedisTimeout, DefaultRedisTimeout), backoff: cmpOr(cfg.RedisBackoff, DefaultRedisBackoff),
		onDecision: cfg.OnDecision, onJunk: cfg.OnJunk, logger: cfg.Logger,
	}
	if l.logger == nil {
		l.logger = slog.New(slog.DiscardHandler)
	}
	var items []string
	if cfg.RequestsPerSecond > 0 && cfg.RequestsBurst > 0 {
		l.req = newLimit(PolicyRequests, cfg.RequestsPerSecond, cfg.RequestsBurst)
		items = append(items, l.req.policyItem())
	}
	if cfg.RESTCallsPerSecond > 0 && cfg.RESTBurst > 0 {
		l.rest = newLimit(PolicyRESTCalls, cfg.RESTCallsPerSecond, cfg.RESTBurst)
		items = append(items, l.rest.policyItem())
	}
	for i, it := range items {
		if i > 0 {
			l.policies += ", "
		}
		l.policies += it
	}
	l.local = newLocalStore(cmpOr(cfg.LocalMaxMerchants, DefaultLocalMaxMerchants), time.Now)
	if cfg.Redis != nil {
		if c, ok := cfg.Redis.(*redis.Client); ok && !c.Options().ContextTimeoutEnabled {
			return nil, errors.New("ratelimit: the Redis client needs ContextTimeoutEnabled, or a slow Redis would hold requests past the Limiter's deadline")
		}
		l.rdb = redis_rate.NewLimiter(cfg.Redis)
	}
	return l, nil
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Decision is the answer for one request.
type Decision struct {
	// Allowed: the request may run. When false, answer RATE_LIMITED
	// (with extensions.retryAfter = RetryAfterSeconds()) before any REST call.
	Allowed bool
	// TooCostly: the request costs more REST calls than the burst, so no
	// wait would admit it (Allowed is false and RetryAfter is zero).
	TooCostly bool
	// RetryAfter is how long until this request would be allowed (refused only).
	RetryAfter time.Duration
	// Limit, Remaining and Reset describe Policy's budget after this
	// request: its burst, the units left now, and how long until it is
	// full again. Policy is the budget that refused the request or, when
	// allowed, the one closest to running out; "" when no limit is set.
	Limit, Remaining int
	Reset            time.Duration
	Policy           string
	// Backend is BackendRedis or BackendLocal; "" when no limit is set.
	Backend string

	policies string
}

// RetryAfterSeconds is RetryAfter in whole seconds, rounded up and at
// least 1 when refused (the Retry-After header and extensions.retryAfter
// share it); 0 when allowed or TooCostly.
func (d Decision) RetryAfterSeconds() int {
	if d.Allowed || d.TooCostly {
		return 0
	}
	return max(1, ceilSeconds(d.RetryAfter))
}

func ceilSeconds(d time.Duration) int {
	return int(math.Ceil(d.Seconds()))
}

// SetHeaders writes RateLimit-Policy and RateLimit (draft-11) and, when
// refused, Retry-After. It writes nothing when no limit is set.
func (d Decision) SetHeaders(h http.Header) {
	if d.Policy == "" {
		return
	}
	h.Set("RateLimit-Policy", d.policies)
	if d.TooCostly {
		return // the policy's q says how much fits; no wait would help
	}
	t := ceilSeconds(d.Reset)
	if !d.Allowed && !d.TooCostly {
		// Retry-After must not point before the end of the effective
		// window: for a refusal the window is the wait.
		t = d.RetryAfterSeconds()
	}
	h.Set("RateLimit", strconv.Quote(d.Policy)+";r="+strconv.Itoa(d.Remaining)+";t="+strconv.Itoa(t))
	if s := d.RetryAfterSeconds(); s > 0 {
		h.Set("Retry-After", strconv.Itoa(s))
	}
}

// result is one budget's answer.
type result struct {
	allowed    bool
	remaining  int
	retryAfter time.Duration
	reset      time.Duration
}

// Allow charges merchant one request and restCalls REST calls and says
// whether the request may run. It never fails: a Redis error or timeout is
// answered from the local budgets.
func (l *Limiter) Allow(ctx context.Context, merchant string, restCalls int) Decision {
	d := l.allow(ctx, merchant, max(0, restCalls), true)
	if l.onDecision != nil {
		l.onDecision(l.outcome(d))
	}
	return d
}

// AllowRESTCalls charges merchant restCalls REST calls, and no request:
// the second half of a request whose request was charged earlier by
// Allow(ctx, merchant, 0). The HTTP edge charges the request before it
// reads the body (so refused and failing requests count too), and the
// REST-call estimate exists only once the operation is validated. With
// nothing to charge (restCalls <= 0, or no REST-calls limit) it allows
// without a decision: no headers, no OnDecision.
func (l *Limiter) AllowRESTCalls(ctx context.Context, merchant string, restCalls int) Decision {
	if restCalls <= 0 || !l.rest.enabled() {
		return Decision{Allowed: true}
	}
	d := l.allow(ctx, merchant, restCalls, false)
	if l.onDecision != nil {
		l.onDecision(l.outcome(d))
	}
	return d
}

// PeekRESTCalls says, without charging anything, whether merchant's
// REST-call budget would admit restCalls now, and what is left of it: a
// dry run's answer. It is Allowed without a policy when there is no
// REST-calls limit; TooCostly past the burst. OnDecision is not told (no
// budget was charged).
func (l *Limiter) PeekRESTCalls(ctx context.Context, merchant string, restCalls int) Decision {
	if !l.rest.enabled() {
		return Decision{Allowed: true}
	}
	if restCalls > l.rest.burst {
		return Decision{TooCostly: true, Policy: l.rest.policy, Limit: l.rest.burst, policies: l.policies}
	}
	if len(merchant) > MaxMerchantBytes {
		sum := sha256.Sum256([]byte(merchant))
		merchant = hex.EncodeToString(sum[:])
	}
	var r result
	backend := BackendLocal
	peeked := false
	if l.rdb != nil && l.redisUsable() {
		rctx, cancel := context.WithTimeout(ctx, l.timeout)
		res, err := l.redisCharge(rctx, l.rest, merchant, 0) // a charge of 0 changes nothing
		cancel()
		if l.observe(ctx, err) == nil {
			r, backend, peeked = res, BackendRedis, true
		}
	}
	if !peeked {
		r = l.local.peek(merchant, l.rest)
	}
	d := Decision{Allowed: r.remaining >= restCalls, Policy: l.rest.policy, Limit: l.rest.burst,
		Remaining: r.remaining, Reset: r.reset, Backend: backend, policies: l.policies}
	if !d.Allowed {
		d.RetryAfter = time.Duration(restCalls-r.remaining) * time.Duration(l.rest.t)
	}
	return d
}

// outcome names d for metrics: a local decision is a fallback only when
// Redis is configured.
func (l *Limiter) outcome(d Decision) string {
	fallback := l.rdb != nil && d.Backend == BackendLocal
	switch {
	case d.TooCostly:
		return OutcomeTooCostly
	case fallback && d.Allowed:
		return OutcomeFallbackAllowed
	case fallback:
		return OutcomeFallbackLimited
	case d.Allowed:
		return OutcomeAllowed
	default:
		return OutcomeLimited
	}
}

func (l *Limiter) allow(ctx context.Context, merchant string, cost int, chargeRequest bool) Decision {
	useReq, useRest := chargeRequest && l.req.enabled(), l.rest.enabled() && cost > 0
	if !useReq && !useRest {
		return Decision{Allowed: true} // nothing to charge: no headers either
	}
	if useRest && cost > l.rest.burst {
		return Decision{TooCostly: true, Policy: l.rest.policy, Limit: l.rest.burst, policies: l.policies}
	}
	if len(merchant) > MaxMerchantBytes {
		sum := sha256.Sum256([]byte(merchant))
		merchant = hex.EncodeToString(sum[:])
	}
	if l.rdb != nil && l.redisUsable() {
		if req, rest, err := l.allowRedis(ctx, merchant, cost, useReq, useRest); err == nil {
			return l.decide(req, rest, useReq, useRest, BackendRedis)
		}
	}
	req, rest := l.local.allow(merchant, l.req, useReq, l.rest, cost, useRest)
	return l.decide(req, rest, useReq, useRest, BackendLocal)
}

// decide turns the budgets' answers into a Decision. A budget that refused
// names the decision; when both allowed, the one with the smaller share
// left does.
func (l *Limiter) decide(req, rest result, useReq, useRest bool, backend string) Decision {
	d := Decision{Allowed: true, Backend: backend, policies: l.policies}
	pick := func(lim limit, r result) {
		d.Policy, d.Limit, d.Remaining, d.Reset = lim.policy, lim.burst, r.remaining, r.reset
		if !r.allowed {
			d.Allowed, d.RetryAfter = false, r.retryAfter
		}
	}
	switch {
	case useReq && !req.allowed:
		pick(l.req, req)
	case useRest && !rest.allowed:
		pick(l.rest, rest)
	case useReq && useRest:
		// remaining/burst compared without division.
		if int64(req.remaining)*int64(l.rest.burst) <= int64(rest.remaining)*int64(l.req.burst) {
			pick(l.req, req)
		} else {
			pick(l.rest, rest)
		}
	case useReq:
		pick(l.req, req)
	default:
		pick(l.rest, rest)
	}
	return d
}
