package gateway_test

// unlimited returns env with the per-merchant rate limits off, for the
// suites whose load on one merchant is the point (the soak, the
// benchmarks): with the default limits their figures would measure
// RATE_LIMITED answers. The limits have their own tests (ratelimit_test.go).
func unlimited(env map[string]string) map[string]string {
	out := map[string]string{"RATE_LIMIT_REST_CALLS_PER_SECOND": "0", "RATE_LIMIT_REQUESTS_PER_SECOND": "0"}
	for k, v := range env {
		out[k] = v
	}
	return out
}

// unlimitedDefaults is the getenv of the default settings, rate limits off.
func unlimitedDefaults(k string) string { return unlimited(nil)[k] }
