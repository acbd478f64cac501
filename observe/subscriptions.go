package observe

import "github.com/prometheus/client_golang/prometheus"

// Subscriptions registers the gauges of live's subscriptions and pollers and the counter of REST
// polls by kind and outcome (plain words, nothing of a caller's), returning the hub's OnPoll hook.
func (m *Metrics) Subscriptions(live func() (subscriptions, pollers int)) func(kind, outcome string) {
	polls := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "paygraph_subscription_polls_total",
		Help: "REST polls made for subscriptions, by resource kind and outcome (changed, unchanged, error, rate_limited)."},
		[]string{"kind", "outcome"})
	m.reg.MustRegister(polls,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "paygraph_subscriptions_active",
			Help: "Live GraphQL subscriptions in this process (SSE and WebSocket)."},
			func() float64 { s, _ := live(); return float64(s) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "paygraph_subscription_pollers_active",
			Help: "Running REST pollers: one per merchant and subscribed resource, however many subscribe to it."},
			func() float64 { _, p := live(); return float64(p) }),
	)
	return func(kind, outcome string) {
		if !plainOutcome(kind) {
			kind = OperationOther
		}
		if !plainOutcome(outcome) {
			outcome = OutcomeError
		}
		polls.WithLabelValues(kind, outcome).Inc()
	}
}
