package gateway_test

import (
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"paygraph/internal/testenv"
	"paygraph/restclient"
	"paygraph/sandbox"
)

// TestBreakerGaugeReadsTheBreaker: paygraph_circuit_breaker_state is a
// GaugeFunc reading restclient's BreakerState when scraped (no hook sets
// it), and the process-wide circuit's change is still logged once, as a
// warning, through the hook. Three merchants the REST API accepted, then
// failing, open the process-wide circuit (BREAKER_FAILURES 3).
func TestBreakerGaugeReadsTheBreaker(t *testing.T) {
	var down atomic.Bool
	rest := &countingREST{handle: func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte(paymentJSON("1.00", "2026-11-21T09:30:00.000Z")))
	}}
	var logs testenv.LockedBuffer
	g := startGateway(t, setup{env: map[string]string{"REST_MAX_RETRIES": "0", "BREAKER_FAILURES": "3", "Config.BreakerCooldown": "1h"},
		rest: rest, logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	const gauge = `paygraph_circuit_breaker_state{upstream="rest"}`
	q := `{ payment(id: "pay_prod_0123456789abcdef0123456789abcdef") { id } }`
	merchants := []http.Header{
		creds(sandbox.Business{APIKey: "ak_test_a", APISecret: "sk_test_a"}),
		creds(sandbox.Business{APIKey: "ak_test_b", APISecret: "sk_test_b"}),
		creds(sandbox.Business{APIKey: "ak_test_c", APISecret: "sk_test_c"}),
	}
	for _, m := range merchants {
		g.Post(t, m, q, nil).WantNoErrors(t) // the REST API accepts each
	}
	if m, _ := scrape(t, g); m[gauge] != float64(restclient.CircuitClosed) {
		t.Fatalf("%s = %v while closed", gauge, m[gauge])
	}
	down.Store(true)
	for _, m := range merchants {
		g.Post(t, m, q, nil).WantCode(t, "UPSTREAM_ERROR")
	}
	if m, _ := scrape(t, g); m[gauge] != float64(restclient.CircuitOpen) {
		t.Fatalf("%s = %v after three merchants' failures, want open (2)", gauge, m[gauge])
	}
	var opened int
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, `"msg":"REST API circuit breaker"`) && strings.Contains(line, `"scope":"process"`) {
			if !strings.Contains(line, `"level":"WARN"`) || !strings.Contains(line, `"from":"closed","to":"open"`) {
				t.Errorf("process circuit line: %s", line)
			}
			opened++
		}
	}
	if opened != 1 {
		t.Errorf("%d process circuit lines, want 1:\n%s", opened, logs.String())
	}
}

// TestNoBreakerNoGauge: with BREAKER_FAILURES 0 (no circuits) there is no
// breaker gauge at all, rather than one that always says closed.
func TestNoBreakerNoGauge(t *testing.T) {
	g := startGateway(t, setup{env: map[string]string{"BREAKER_FAILURES": "0"}})
	if _, raw := scrape(t, g); strings.Contains(raw, "paygraph_circuit_breaker_state") {
		t.Errorf("a breaker gauge without a breaker:\n%s", raw)
	}
}
