package ratelimit

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

var errJunkBudget = errors.New("ratelimit: a budget in Redis that redis_rate did not write")

// junkBudget reports whether a charge of n to lim read a value redis_rate
// never writes: its script failed on it, or it answered a wait or reset no
// GCRA of lim gives (a second of slack for its floating point).
func junkBudget(res *redis_rate.Result, err error, lim limit, n int) bool {
	if err != nil {
		var re redis.Error
		return errors.As(err, &re) && strings.Contains(err.Error(), "user_script")
	}
	refusedNow := res.Allowed == 0 && res.RetryAfter <= 0
	return refusedNow || res.ResetAfter < 0 || res.RetryAfter > time.Duration(int64(n)*lim.t)+time.Second ||
		res.ResetAfter > time.Duration(lim.tau)+time.Second
}

// keyPrefix namespaces the budgets (redis_rate puts "rate:" before it):
// rate:paygraph:rl:<policy>:<merchant>.
const keyPrefix = "paygraph:rl:"

// allowRedis charges one request, then if allowed cost REST calls, in Redis
// within l.timeout (on error: local).
func (l *Limiter) allowRedis(ctx context.Context, merchant string, cost int, useReq, useRest bool) (req, rest result, err error) {
	rctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	if useReq {
		if req, err = l.redisCharge(rctx, l.req, merchant, 1); err != nil || !req.allowed {
			return req, rest, l.observe(ctx, err)
		}
	}
	if useRest {
		rest, err = l.redisCharge(rctx, l.rest, merchant, cost)
	}
	return req, rest, l.observe(ctx, err)
}

// redisCharge charges n to merchant's budget lim in Redis. A budget redis_rate
// could not have written (which could refuse the merchant for good) is
// counted, deleted and charged again, fresh.
func (l *Limiter) redisCharge(ctx context.Context, lim limit, merchant string, n int) (result, error) {
	key, rl := keyPrefix+lim.policy+":"+merchant, redis_rate.Limit{Rate: lim.rate, Burst: lim.burst, Period: time.Second}
	res, err := l.rdb.AllowN(ctx, key, rl, n)
	if junkBudget(res, err, lim, n) {
		if l.onJunk != nil {
			l.onJunk()
		}
		if err = l.rdb.Reset(ctx, key); err == nil {
			res, err = l.rdb.AllowN(ctx, key, rl, n)
		}
	}
	if err == nil && junkBudget(res, nil, lim, n) {
		err = errJunkBudget // written again meanwhile: this decision is local
	}
	if err != nil {
		return result{}, err
	}
	return result{allowed: res.Allowed > 0, remaining: res.Remaining, reset: max(0, res.ResetAfter),
		retryAfter: max(0, res.RetryAfter)}, nil
}

// redisUsable reports whether this Allow may use Redis: while healthy, or as
// the one probe after a backoff, so that a dead Redis costs one request's
// timeout per backoff.
func (l *Limiter) redisUsable() bool {
	until := l.downUntil.Load()
	if until == 0 {
		return true
	}
	now := time.Now().UnixNano()
	if now < until {
		return false
	}
	return l.downUntil.CompareAndSwap(until, now+int64(l.backoff))
}

// observe records one Allow's Redis outcome and returns err; a failure backs
// off, unless ctx itself ended.
func (l *Limiter) observe(ctx context.Context, err error) error {
	if err == nil {
		if l.downUntil.Load() != 0 { // no store (cache line) while healthy
			l.downUntil.Store(0)
		}
		if l.down.CompareAndSwap(true, false) {
			l.logger.InfoContext(ctx, "rate limits: Redis is available again; budgets are shared")
		}
		return nil
	}
	if ctx.Err() != nil {
		return err
	}
	l.redisErrors.Add(1)
	l.downUntil.Store(time.Now().Add(l.backoff).UnixNano())
	if l.down.CompareAndSwap(false, true) {
		l.logger.WarnContext(ctx, "rate limits: Redis unavailable; each replica applies the limits on its own until it is back",
			"err", err, "backoff", l.backoff.String())
	}
	return err
}

// RedisErrors counts the Redis calls that failed or timed out.
func (l *Limiter) RedisErrors() uint64 { return l.redisErrors.Load() }
