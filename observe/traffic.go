// The counters of the traffic controls and of Redis, each labelled by one of a
// few values (no merchant).

package observe

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"
)

// RateLimitCounter registers paygraph_rate_limit_decisions_total and returns ratelimit's OnDecision. Call it once.
func (m *Metrics) RateLimitCounter() func(outcome string) {
	return m.outcomeCounter("paygraph_rate_limit_decisions_total",
		"Per-merchant rate limit decisions by outcome: one when a request is charged at the edge, one when its operation's REST calls are (none for an operation without any).")
}

// TrustedDocumentsCounter registers paygraph_trusted_documents_total: what
// counts an outcome. Call it once.
func (m *Metrics) TrustedDocumentsCounter() func(outcome string) {
	return m.outcomeCounter("paygraph_trusted_documents_total",
		"GraphQL requests by trusted-documents outcome (allow and enforce modes only).")
}

func (m *Metrics) outcomeCounter(name, help string) func(string) {
	add := m.labelCounter(name, help, "outcome", OutcomeError, plainOutcome)
	return func(outcome string) { add(outcome, 1) }
}

// labelCounter registers a counter of one label and returns what adds to a value's series (other
// unless known); zero's start exported at 0.
func (m *Metrics) labelCounter(name, help, label, other string, known func(string) bool, zero ...string) func(v string, n float64) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{label})
	m.reg.MustRegister(c)
	for _, v := range zero {
		c.WithLabelValues(v)
	}
	return func(v string, n float64) {
		if !known(v) {
			v = other
		}
		c.WithLabelValues(v).Add(n)
	}
}

// plainOutcome: the controls' outcomes are short lower-case words; any other value (a bug) is no label.
func plainOutcome(s string) bool {
	return bytesOK(s, 32, func(_ int, c byte) bool { return 'a' <= c && c <= 'z' || c == '_' })
}

// RedisSkipped registers paygraph_redis_skipped_total and returns what counts n values read back
// from Redis that did not parse or check, by what was read. Call it once.
func (m *Metrics) RedisSkipped() func(read string, n int) {
	add := m.labelCounter("paygraph_redis_skipped_total",
		"Values read back from Redis that did not parse or check and were skipped, by what was read (stream, lease, apq, ratelimit). Anything nonzero means something other than the gateway writes to its Redis.",
		"read", "other", func(v string) bool { return slices.Contains([]string{"stream", "lease", "apq", "ratelimit"}, v) })
	return func(read string, n int) { add(read, float64(n)) }
}

// redisStores are paygraph_redis_errors_total's label values: what falls back to memory when Redis fails.
var redisStores = []string{"apq", "accepted", "lease", "stream"}

// RedisErrors registers paygraph_redis_errors_total and returns what counts a Redis operation that
// failed or timed out, by the store that then falls back to memory. Call it once.
func (m *Metrics) RedisErrors() func(store string) {
	// Every store's series is exported at 0: the alert's rate reads it.
	add := m.labelCounter("paygraph_redis_errors_total",
		"Redis operations that failed or timed out, by the store that falls back to the replica's memory (apq, accepted, lease, stream).",
		"store", "other", func(v string) bool { return slices.Contains(redisStores, v) }, redisStores...)
	return func(store string) { add(store, 1) }
}
