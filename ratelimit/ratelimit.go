// Package ratelimit decides, before any REST call, whether a merchant may run
// one more GraphQL request, so that none can spend the REST capacity the
// others need. Each merchant has two GCRA budgets, requests and REST calls (a
// request's complexity), charged in that order. With Redis every replica
// charges the same budgets (go-redis/redis_rate); without it, or while it
// fails, they are kept in bounded memory with the same arithmetic.
// Decision.SetHeaders writes the RateLimit fields of
// draft-ietf-httpapi-ratelimit-headers. The merchant key is an opaque value
// the caller derives, never a secret.
package ratelimit

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// Defaults of the settings. The REST burst, twice MAX_COMPLEXITY's 500, fits
// any operation the complexity limit admits; the requests rate equals the
// REST-calls rate, binding only requests that make no REST call.
const (
	DefaultRESTCallsPerSecond = 200
	DefaultRESTBurst          = 1000
	DefaultRequestsPerSecond  = 200
	DefaultRequestsBurst      = 400
	// The anonymous budget, one a replica: enough for GraphiQL or codegen
	// introspection, not a merchant's CPU.
	DefaultAnonymousPerSecond = 20
	// One client address's part of it (IPv6 by /64), charged first: a flooding
	// address leaves others the rest.
	DefaultAnonymousPerAddressPerSecond = 2
	DefaultAnonymousPerAddressBurst     = 10

	DefaultRedisTimeout      = 50 * time.Millisecond
	DefaultRedisBackoff      = time.Second
	DefaultLocalMaxMerchants = 10000

	// MaxMerchantBytes is the longest merchant key kept as given; a longer one
	// becomes its SHA-256.
	MaxMerchantBytes = 128
)

// The policies (Decision.Policy and the headers) and the backends
// (Decision.Backend).
const (
	PolicyRequests  = "requests"
	PolicyRESTCalls = "rest-calls"
	BackendRedis    = "redis"
	BackendLocal    = "local"
)

// Outcomes handed to Config.OnDecision, one per Allow.
const (
	OutcomeAllowed         = "allowed"          // allowed by the shared (or only) budgets
	OutcomeLimited         = "limited"          // refused; retry after Decision.RetryAfter
	OutcomeFallbackAllowed = "fallback_allowed" // Redis failed or is in backoff: allowed by the local budgets
	OutcomeFallbackLimited = "fallback_limited" // Redis failed or is in backoff: refused by the local budgets
	OutcomeTooCostly       = "too_costly"       // costs more REST calls than the burst: never allowed
)

// Config is the limits and the Redis behaviour; zero disables both limits,
// DefaultConfig returns the defaults.
type Config struct {
	// A merchant's REST calls per second and a full budget's burst; either
	// zero disables the REST-calls limit.
	RESTCallsPerSecond, RESTBurst    int
	RequestsPerSecond, RequestsBurst int // the same for requests

	// Redis (not closed here) holds the budgets all replicas share; a
	// *redis.Client needs ContextTimeoutEnabled.
	Redis redis.UniversalClient
	// RedisTimeout bounds one Allow's Redis calls; RedisBackoff, how long a
	// failed Redis is skipped (0: default).
	RedisTimeout, RedisBackoff time.Duration
	LocalMaxMerchants          int // the merchants the local budgets hold

	// Optional hooks: each Allow's Outcome (metrics); each budget read back
	// from Redis that redis_rate could not have written (it is then reset);
	// Redis going and coming back.
	OnDecision func(outcome string)
	OnJunk     func()
	Logger     *slog.Logger
}

// DefaultConfig returns the default limits, without Redis.
func DefaultConfig() Config {
	return Config{RESTCallsPerSecond: DefaultRESTCallsPerSecond, RESTBurst: DefaultRESTBurst,
		RequestsPerSecond: DefaultRequestsPerSecond, RequestsBurst: DefaultRequestsBurst}
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
	req, rest        limit
	policies         string // the RateLimit-Policy field value, the same on every response
	local            *localStore
	rdb              *redis_rate.Limiter
	timeout, backoff time.Duration
	onDecision       func(string)
	onJunk           func()
	logger           *slog.Logger
	downUntil        atomic.Int64 // unix nanoseconds: Redis is left alone until then; 0: healthy
	down             atomic.Bool  // for logging the transitions only
	redisErrors      atomic.Uint64
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
		timeout: cmp.Or(cfg.RedisTimeout, DefaultRedisTimeout), backoff: cmp.Or(cfg.RedisBackoff, DefaultRedisBackoff),
		onDecision: cfg.OnDecision, onJunk: cfg.OnJunk, logger: cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler)),
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
	l.policies = strings.Join(items, ", ")
	l.local = newLocalStore(cmp.Or(cfg.LocalMaxMerchants, DefaultLocalMaxMerchants), time.Now)
	if cfg.Redis != nil {
		if c, ok := cfg.Redis.(*redis.Client); ok && !c.Options().ContextTimeoutEnabled {
			return nil, errors.New("ratelimit: the Redis client needs ContextTimeoutEnabled, or a slow Redis would hold requests past the Limiter's deadline")
		}
		l.rdb = redis_rate.NewLimiter(cfg.Redis)
	}
	return l, nil
}

// Decision is the answer for one request.
type Decision struct {
	Allowed    bool          // the request may run; when false, answer RATE_LIMITED before any REST call
	TooCostly  bool          // it costs more REST calls than the burst: no wait admits it
	RetryAfter time.Duration // until this request would be allowed (refused only)
	// Limit, Remaining and Reset describe Policy's budget after this request;
	// Policy is the budget that refused it or, when allowed, the one closest
	// to running out ("" when no limit is set).
	Limit, Remaining int
	Reset            time.Duration
	Policy           string
	Backend          string // BackendRedis or BackendLocal; "" when no limit is set

	policies string
}

// RetryAfterSeconds is RetryAfter in seconds, rounded up, at least 1 when
// refused; 0 when allowed or TooCostly.
func (d Decision) RetryAfterSeconds() int {
	if d.Allowed || d.TooCostly {
		return 0
	}
	return max(1, ceilSeconds(d.RetryAfter))
}

func ceilSeconds(d time.Duration) int { return int(math.Ceil(d.Seconds())) }

// SetHeaders writes RateLimit-Policy and RateLimit and, when refused,
// Retry-After; nothing when no limit is set. A GCRA of rate R and burst B is
// advertised as q=B per w=ceil(B/R) seconds.
func (d Decision) SetHeaders(h http.Header) {
	if d.Policy == "" {
		return
	}
	h.Set("RateLimit-Policy", d.policies)
	if d.TooCostly {
		return // the policy's q says how much fits; no wait would help
	}
	t := ceilSeconds(d.Reset)
	if !d.Allowed {
		t = d.RetryAfterSeconds() // for a refusal the window is the wait
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

// Allow charges merchant one request and restCalls REST calls, saying whether
// it may run (Redis down: locally).
func (l *Limiter) Allow(ctx context.Context, merchant string, restCalls int) Decision {
	return l.record(l.allow(ctx, merchant, max(0, restCalls), true))
}

func (l *Limiter) record(d Decision) Decision {
	if l.onDecision != nil {
		l.onDecision(l.outcome(d))
	}
	return d
}

// AllowRESTCalls charges merchant restCalls REST calls and no request: the
// second half of a request charged earlier by Allow(ctx, merchant, 0). With
// nothing to charge it allows without a decision (no headers).
func (l *Limiter) AllowRESTCalls(ctx context.Context, merchant string, restCalls int) Decision {
	if restCalls <= 0 || !l.rest.enabled() {
		return Decision{Allowed: true}
	}
	return l.record(l.allow(ctx, merchant, restCalls, false))
}

// PeekRESTCalls says, charging nothing, whether merchant's REST-call budget
// admits restCalls now, and its rest.
func (l *Limiter) PeekRESTCalls(ctx context.Context, merchant string, restCalls int) Decision {
	if !l.rest.enabled() {
		return Decision{Allowed: true}
	}
	if restCalls > l.rest.burst {
		return Decision{TooCostly: true, Policy: l.rest.policy, Limit: l.rest.burst, policies: l.policies}
	}
	merchant = boundedKey(merchant)
	var r result
	backend := BackendLocal
	if l.rdb != nil && l.redisUsable() {
		if _, res, err := l.allowRedis(ctx, merchant, 0, false, true); err == nil { // a charge of 0 changes nothing
			r, backend = res, BackendRedis
		}
	}
	if backend == BackendLocal {
		r = l.local.peek(merchant, l.rest) // Redis is off or failed
	}
	r.allowed = r.remaining >= restCalls
	r.retryAfter = time.Duration(restCalls-r.remaining) * time.Duration(l.rest.t) // read when refused only
	return l.decide(result{}, r, false, true, backend)
}

// boundedKey is merchant, or its SHA-256 when longer than MaxMerchantBytes.
func boundedKey(merchant string) string {
	if len(merchant) <= MaxMerchantBytes {
		return merchant
	}
	sum := sha256.Sum256([]byte(merchant))
	return hex.EncodeToString(sum[:])
}

// outcome names d for metrics: a local decision is a fallback only when Redis
// is configured.
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
	merchant = boundedKey(merchant)
	if l.rdb != nil && l.redisUsable() {
		if req, rest, err := l.allowRedis(ctx, merchant, cost, useReq, useRest); err == nil {
			return l.decide(req, rest, useReq, useRest, BackendRedis)
		}
	}
	req, rest := l.local.allow(merchant, l.req, useReq, l.rest, cost, useRest)
	return l.decide(req, rest, useReq, useRest, BackendLocal)
}

// decide turns the answers into a Decision named by a budget that refused, or
// else the one with less share left.
func (l *Limiter) decide(req, rest result, useReq, useRest bool, backend string) Decision {
	lim, r := l.req, req
	switch {
	case useReq && !req.allowed:
	case !useReq, useRest && !rest.allowed:
		lim, r = l.rest, rest
	case useRest && int64(req.remaining)*int64(l.rest.burst) > int64(rest.remaining)*int64(l.req.burst):
		lim, r = l.rest, rest // both allowed: remaining/burst compared without division
	}
	d := Decision{Allowed: r.allowed, Policy: lim.policy, Limit: lim.burst, Remaining: r.remaining, Reset: r.reset,
		Backend: backend, policies: l.policies}
	if !r.allowed {
		d.RetryAfter = r.retryAfter
	}
	return d
}
