package gateway_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"paygraph/gateway"
	"paygraph/internal/testenv"
	"strings"
	"testing"

	"paygraph/observe"
	"paygraph/sandbox"
)

// TestOwnCredentialsNeverLoggedOrLabelled: a caller whose own key and
// secret are not shaped like credentials (no pattern can find them) uses
// them as its operation name and as its X-Request-Id, on requests the
// REST API serves (so the name would join the metric label set) and on
// refused ones. Neither value, nor a long piece of one, reaches the log
// (through the logger the binary uses), /metrics, or the X-Request-Id the
// gateway answers with; the requests are logged and served all the same.
func TestOwnCredentialsNeverLoggedOrLabelled(t *testing.T) {
	t.Parallel()
	// Plain GraphQL names, so that a label or an access line could hold
	// them; the REST API below takes them for the first demo merchant's.
	const (
		oddKey    = "Merchant_Key_7Hq2Lw9Xz4Pv"
		oddSecret = "Merchant_Secret_R8d3Kt6Yb1Nc5Wm"
	)
	sb := sandbox.New(sandbox.Options{})
	biz := sb.Businesses()[0]
	pay := sb.Payments(biz.APIKey)[0].ID
	rest := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") == oddKey && r.Header.Get("X-Api-Secret") == oddSecret {
			r.Header.Set("X-Api-Key", biz.APIKey)
			r.Header.Set("X-Api-Secret", biz.APISecret)
		}
		sb.ServeHTTP(w, r)
	})
	var logs testenv.LockedBuffer
	logger := gateway.NewLogger(&logs, gateway.Config{LogFormat: "json"})
	g := startGateway(t, setup{rest: rest, logger: logger})
	odd := http.Header{"X-Api-Key": {oddKey}, "X-Api-Secret": {oddSecret}}
	with := func(h http.Header, kv ...string) http.Header {
		h = h.Clone()
		for i := 0; i < len(kv); i += 2 {
			h.Add(kv[i], kv[i+1])
		}
		return h
	}
	payment := `{ payment(id: "` + pay + `") { id } }`
	named := func(name string) string { return "query " + name + " " + payment }

	sent := 0
	for _, tc := range []struct {
		name, query, operationName string
		header                     http.Header
		get                        bool
		served                     bool // the REST API answers 2xx
	}{
		{"control: a plain name is labelled", named("PaymentScreen"), "", odd, false, true},
		{"secret as operation name", named(oddSecret), oddSecret, odd, false, true},
		{"key as operation name", named(oddKey), oddKey, odd, false, true},
		{"secret as operation name over GET", named(oddSecret), "", odd, true, true},
		{"secret inside the operation name", named("X" + oddSecret + "Y"), "", odd, false, true},
		{"secret as X-Request-Id", payment, "", with(odd, "X-Request-Id", oddSecret), false, true},
		{"key as X-Request-Id", payment, "", with(odd, "X-Request-Id", oddKey), false, true},
		{"piece of the secret as X-Request-Id", payment, "", with(odd, "X-Request-Id", oddSecret[:20]), false, true},
		{"secret as operation name, parse error", "query " + oddSecret + " { payment(", oddSecret, odd, false, false},
		{"secret as X-Request-Id, secret missing", payment, "",
			http.Header{"X-Api-Secret": {oddSecret}, "X-Request-Id": {oddSecret}}, false, false},
		{"secret as X-Request-Id, key sent twice", payment, "",
			http.Header{"X-Api-Key": {oddKey, oddKey}, "X-Api-Secret": {oddSecret}, "X-Request-Id": {oddSecret}}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var req *http.Request
			if tc.get {
				req, _ = http.NewRequest(http.MethodGet, g.URL+"/graphql?"+url.Values{"query": {tc.query}}.Encode(), nil)
				req.Header = tc.header.Clone()
			} else {
				body, _ := json.Marshal(map[string]string{"query": tc.query, "operationName": tc.operationName})
				req, _ = http.NewRequest(http.MethodPost, g.URL+"/graphql", bytes.NewReader(body))
				req.Header = tc.header.Clone()
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			sent++
			if tc.served && (resp.StatusCode != http.StatusOK || !strings.Contains(string(raw), pay)) {
				t.Errorf("not served: status %d, %s", resp.StatusCode, raw)
			}
			id := resp.Header.Get("X-Request-Id")
			if !observe.SaneRequestID(id) || strings.Contains(oddSecret, id) || strings.Contains(oddKey, id) {
				t.Errorf("X-Request-Id %q", id)
			}
			for _, v := range []string{oddKey, oddSecret, oddSecret[:20]} {
				if strings.Contains(string(raw), v) {
					t.Errorf("the answer holds %q: %s", v, raw)
				}
			}
		})
	}

	out := logs.String()
	access := 0
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec["msg"] == "request" && rec["path"] == "/graphql" {
			access++
		}
	}
	if access != sent {
		t.Errorf("%d access lines for %d requests", access, sent)
	}
	_, metrics := scrape(t, g)
	for _, leak := range []string{oddKey, oddSecret, oddSecret[:20], oddKey[:16]} {
		if strings.Contains(out, leak) {
			t.Errorf("the log holds %q:\n%s", leak, out)
		}
		if strings.Contains(metrics, leak) {
			t.Errorf("/metrics holds %q", leak)
		}
	}
	// The control proves the secret's name would have been labelled: the
	// same requests, named plainly, are.
	if !strings.Contains(metrics, `paygraph_graphql_requests_total{operation="PaymentScreen",outcome="ok"} 1`) {
		t.Errorf("the control operation has no label of its own:\n%s", grepLines(metrics, "paygraph_graphql_requests_total"))
	}
}

// grepLines returns the lines of s that hold sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
