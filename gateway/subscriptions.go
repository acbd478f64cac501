package gateway

import (
	"net/url"

	"paygraph/livepoll"
	"paygraph/observe"
)

// subscriptionHub makes the process's livepoll hub (SUBSCRIPTION_*
// settings), its metrics, and closes it with the gateway: every
// subscription completes and every poller stops.
func (g *Gateway) subscriptionHub(metrics *observe.Metrics) (*livepoll.Hub, error) {
	cfg := g.cfg.Subscriptions
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
	g.closers = append(g.closers, closerFunc(func() error { hub.Close(); return nil }))
	return hub, nil
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// originPatterns turns the CORS origins into the WebSocket's origin
// patterns (hosts): the pages allowed to call /graphql may open one too.
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
