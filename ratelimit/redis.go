// The shared budgets in Redis, and when to stop and start using them.

package ratelimit

import (
	"context"
	"time"
)

// keyPrefix namespaces the budgets (redis_rate puts "rate:" before it):
// rate:paygraph:rl:<policy>:<merchant>.
const keyPrefix = "paygraph:rl:"

// allowRedis charges the budgets in Redis: one request, then, if it was
// allowed, cost REST calls, within l.timeout for both. Any error returns
// it, after starting a backoff, and the caller decides locally.
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

func (l *Limiter) redisCharge(ctx context.Context, lim limit, merchant string, n int) (result, error) {
	res, err := l.rdb.AllowN(ctx, keyPrefix+lim.policy+":"+merchant, lim.redisLimit(), n)
	if err != nil {
		return result{}, err
	}
	r := result{allowed: res.Allowed > 0, remaining: res.Remaining, reset: max(0, res.ResetAfter)}
	if !r.allowed {
		r.retryAfter = max(0, res.RetryAfter)
	}
	return r, nil
}

// redisUsable reports whether this Allow may use Redis: always while it is
// healthy; during a backoff never; after a backoff, for one caller at a
// time (the probe), so that a dead or silent Redis costs one request's
// timeout per backoff, not every request's.
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

// observe records the outcome of one Allow's Redis calls and returns err.
// A failure starts a backoff, unless the caller's own context ended (which
// says nothing about Redis).
func (l *Limiter) observe(ctx context.Context, err error) error {
	if err == nil {
		if l.downUntil.Load() != 0 {
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
