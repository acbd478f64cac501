package gateway

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"net/url"
	"time"

	"github.com/redis/go-redis/v9"

	"paygraph/graph/live"
	"paygraph/livepoll"
	"paygraph/observe"
	"paygraph/ratelimit"
	"paygraph/restclient"
)

// subscriptionHub makes the livepoll hub, closed with the gateway. With
// REDIS_URL replicas share pollers there, sealed with AES-256-GCM (customer
// data); what does not decode is skipped and counted.
func (g *Gateway) subscriptionHub(metrics *observe.Metrics, rdb *redis.Client, merchantKey *restclient.MerchantKey, skipped func(read string, n int), failed func(store string)) (*livepoll.Hub, error) {
	cfg := g.cfg.Subscriptions
	cfg.Decode = func(kind string, data []byte) (any, error) {
		v, err := live.Decode(kind, data)
		if err != nil {
			skipped(livepoll.SkippedStream, 1)
		}
		return v, err
	}
	if rdb != nil {
		block, err := aes.NewCipher(merchantKey.Derive("live status at rest"))
		if err != nil {
			return nil, err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		cfg.Store = countedStore{livepoll.NewRedisStore(rdb, 0).Sealed(aead).CountingSkipped(skipped), failed}
	}
	var hub *livepoll.Hub
	countPoll := metrics.Subscriptions(func() (int, int) {
		st := hub.Stats()
		return st.Subscriptions, st.Pollers
	})
	cfg.OnPoll = func(kind string, o livepoll.Outcome) { countPoll(kind, string(o)) }
	hub, err := livepoll.New(cfg)
	if err != nil {
		return nil, err
	}
	g.hub = hub
	g.closers = append(g.closers, func() error { hub.Close(); return nil })
	return hub, nil
}

// chargePolls charges a poll to its merchant's REST-call budget; nil without a
// limiter.
func chargePolls(limiter *ratelimit.Limiter) func(ctx context.Context, merchant string, restCalls int) error {
	if limiter == nil {
		return nil
	}
	return func(ctx context.Context, merchant string, restCalls int) error {
		d := limiter.AllowRESTCalls(ctx, merchant, restCalls)
		if d.Allowed {
			return nil
		}
		return &restclient.Error{Kind: restclient.KindRateLimited, RetryAfter: d.RetryAfter,
			Message: "rate limit reached: this merchant has spent its REST-call budget; the poll waits"}
	}
}

// originPatterns are the CORS origins' hosts, the WebSocket's patterns.
func originPatterns(origins []string) []string {
	var hosts []string
	for _, o := range origins {
		if o == "*" {
			return []string{"*"}
		}
		if u, err := url.Parse(o); err == nil && u.Host != "" {
			hosts = append(hosts, u.Host)
		}
	}
	return hosts
}

// countedStore counts the failed operations of a live-status Store.
type countedStore struct {
	livepoll.Store
	failed func(store string)
}

func (s countedStore) Lease(ctx context.Context, key livepoll.Key, ttl, keep time.Duration) (bool, error) {
	ok, err := s.Store.Lease(ctx, key, ttl, keep)
	return ok, redisFailed(ctx, err, func() { s.failed("lease") })
}

func (s countedStore) Append(ctx context.Context, key livepoll.Key, r livepoll.Record, prev uint64, keep time.Duration) (uint64, error) {
	id, err := s.Store.Append(ctx, key, r, prev, keep)
	return id, redisFailed(ctx, err, func() { s.failed("stream") })
}

func (s countedStore) Since(ctx context.Context, key livepoll.Key, after uint64) ([]livepoll.Record, error) {
	rs, err := s.Store.Since(ctx, key, after)
	return rs, redisFailed(ctx, err, func() { s.failed("stream") })
}
