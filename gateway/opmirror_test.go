package gateway_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"paygraph/gateway"
	"paygraph/graph"
	"paygraph/sandbox"
)

// syncBuffer is a log sink two goroutines may write.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) take() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.b.String()
	s.b.Reset()
	return out
}

// TestOperationMirrorMatchesGqlgen: the same requests, in the same order,
// to two gateways in front of one sandbox, one making each operation's
// context with graph's mirror of gqlgen's CreateOperationContext
// (graph/opctx.go) and one with gqlgen's, answer the same: status,
// headers (but Date), body, access-log line (but its times and ids), and
// in the end the same metrics (but durations). The requests: single
// payments, aliases, lists, by literal and by variable, not found, bad
// variables of every kind, limits exceeded, APQ misses, registrations and
// hits, GET, a batch, @defer, a dry run; under the default settings, with
// customer data masked, and with cost receipts.
func TestOperationMirrorMatchesGqlgen(t *testing.T) {
	defer graph.SetOperationMirror(true)
	for _, tc := range []struct {
		name string
		env  map[string]string
	}{
		{"defaults", nil},
		{"customer data masked", map[string]string{"CUSTOMER_DATA_MAX": "masked"}},
		{"cost receipts, tight limits", map[string]string{"COST_RECEIPTS": "true", "Config.MaxDepth": "4", "MAX_COMPLEXITY": "12"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// One cursor key: the same cursors. The REST-call budget far
			// from the requests budget, so that which of the two the
			// RateLimit header names (the requests budget, which barely refills)
			// does not hang on their refill
			// between the two gateways' answers.
			env := map[string]string{"CURSOR_KEYS": strings.Repeat("5a", 32), "RATE_LIMIT_REST_CALLS_PER_SECOND": "100000", "RATE_LIMIT_REQUESTS_PER_SECOND": "1"}
			for k, v := range tc.env {
				env[k] = v
			}
			sb := sandbox.New(sandbox.Options{})
			biz := sb.Businesses()[0]
			pays := sb.Payments(biz.APIKey)
			pay, pay2 := pays[0].ID, pays[1].ID
			var logsOn, logsOff syncBuffer
			on := startGatewayWith(t, env, sb, gateway.NewLogger(&logsOn, gateway.Config{LogFormat: "json"}))
			off := startGatewayWith(t, env, sb, gateway.NewLogger(&logsOff, gateway.Config{LogFormat: "json"}))
			h := creds(biz)
			// Uncompressed, so that the log's bytes are the body's (net/http
			// would ask for gzip and hide it).
			h.Set("Accept-Encoding", "identity")
			const single = `query One($id: ID!) { payment(id: $id) { id status amount { paisa currency } customer { name email address } createdAt } }`
			aliases := "query A($id: ID!, $id2: ID!) {"
			for i := range 20 {
				v := "$id"
				if i%2 == 1 {
					v = "$id2"
				}
				aliases += fmt.Sprintf(" a%d: payment(id: %s) { id status customer { name } }", i, v)
			}
			aliases += " }"
			const list = `query L($after: String) { payments(first: 20, after: $after) { edges { cursor node { id status customer { name address } } } pageInfo { hasNextPage endCursor } } }`
			sum := sha256.Sum256([]byte(single))
			hash := hex.EncodeToString(sum[:])
			apq := map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": hash}}
			post := func(body map[string]any) func() (string, string, http.Header, []byte) {
				b, _ := json.Marshal(body)
				return func() (string, string, http.Header, []byte) { return http.MethodPost, "/graphql", h, b }
			}
			get := func(q url.Values) func() (string, string, http.Header, []byte) {
				return func() (string, string, http.Header, []byte) { return http.MethodGet, "/graphql?" + q.Encode(), h, nil }
			}
			deferred := func() (string, string, http.Header, []byte) {
				b, _ := json.Marshal(map[string]any{"query": `query D($id: ID!) { payment(id: $id) { id ... @defer { status } } }`, "variables": map[string]any{"id": pay}})
				hd := h.Clone()
				hd.Set("Accept", "multipart/mixed; deferSpec=20220824, application/json")
				return http.MethodPost, "/graphql", hd, b
			}
			graphQLResponse := func() (string, string, http.Header, []byte) {
				b, _ := json.Marshal(map[string]any{"query": single, "variables": map[string]any{"id": 7}})
				hd := h.Clone()
				hd.Set("Accept", "application/graphql-response+json")
				return http.MethodPost, "/graphql", hd, b
			}
			anonymous := func() (string, string, http.Header, []byte) {
				b, _ := json.Marshal(map[string]any{"query": single, "variables": map[string]any{"id": pay}})
				return http.MethodPost, "/graphql", http.Header{"Accept-Encoding": {"identity"}}, b
			}
			requests := []struct {
				name string
				req  func() (string, string, http.Header, []byte)
			}{
				{"a payment by variable", post(map[string]any{"query": single, "variables": map[string]any{"id": pay}})},
				{"the same again", post(map[string]any{"query": single, "variables": map[string]any{"id": pay2}})},
				{"a payment by literal", post(map[string]any{"query": `{ payment(id: "` + pay + `") { id status } }`})},
				{"20 aliases of two ids", post(map[string]any{"query": aliases, "variables": map[string]any{"id": pay, "id2": pay2}})},
				{"20 aliases again", post(map[string]any{"query": aliases, "variables": map[string]any{"id": pay2, "id2": pay}})},
				{"a list", post(map[string]any{"query": list})},
				{"a list again, a null cursor", post(map[string]any{"query": list, "variables": map[string]any{"after": nil}})},
				{"a list, a bad cursor", post(map[string]any{"query": list, "variables": map[string]any{"after": "nope"}})},
				{"not found", post(map[string]any{"query": single, "variables": map[string]any{"id": "pay_doesnotexist00"}})},
				{"an invalid id", post(map[string]any{"query": single, "variables": map[string]any{"id": "nope"}})},
				{"a numeric id", post(map[string]any{"query": single, "variables": map[string]any{"id": 12}})},
				{"a fractional id", post(map[string]any{"query": single, "variables": map[string]any{"id": 12.5}})},
				{"a null id", post(map[string]any{"query": single, "variables": map[string]any{"id": nil}})},
				{"no id", post(map[string]any{"query": single})},
				{"a list id", post(map[string]any{"query": single, "variables": map[string]any{"id": []any{pay}}})},
				{"an object id", post(map[string]any{"query": single, "variables": map[string]any{"id": map[string]any{"a": 1}}})},
				{"one id of two missing", post(map[string]any{"query": aliases, "variables": map[string]any{"id": pay}})},
				{"a cursor of the wrong type", post(map[string]any{"query": list, "variables": map[string]any{"after": 5}})},
				{"an operation not there", post(map[string]any{"query": single, "operationName": "Nope", "variables": map[string]any{"id": pay}})},
				{"a parse error", post(map[string]any{"query": `{ payment(id: "x") { id }`})},
				{"a validation error", post(map[string]any{"query": `{ payment(id: "x") { nope } }`})},
				{"too deep", post(map[string]any{"query": `{ payments { edges { node { customer { name } } } } }`})},
				{"over the complexity", post(map[string]any{"query": `query N($ids: [ID!]!) { nodes(ids: $ids) { id } }`, "variables": map[string]any{"ids": slices.Repeat([]any{pay}, 60)}})},
				{"an APQ miss", post(map[string]any{"variables": map[string]any{"id": pay}, "extensions": apq})},
				{"an APQ registration", post(map[string]any{"query": single, "variables": map[string]any{"id": pay}, "extensions": apq})},
				{"an APQ hit", post(map[string]any{"variables": map[string]any{"id": pay2}, "extensions": apq})},
				{"an APQ hit, a bad variable", post(map[string]any{"variables": map[string]any{"id": true}, "extensions": apq})},
				{"an APQ hash that does not match", post(map[string]any{"query": `{ __typename }`, "extensions": apq})},
				{"a GET", get(url.Values{"query": {single}, "variables": {`{"id":"` + pay + `"}`}})},
				{"a GET, a bad variable", get(url.Values{"query": {single}, "variables": {`{"id":1}`}})},
				{"a mutation by GET", get(url.Values{"query": {`mutation { x }`}})},
				{"a batch", func() (string, string, http.Header, []byte) {
					return http.MethodPost, "/graphql", h, []byte(`[{"query":"{ __typename }"},{"query":"{ __typename }"}]`)
				}},
				{"@defer", deferred},
				{"graphql-response+json, a bad variable", graphQLResponse},
				{"a dry run", post(map[string]any{"query": single, "variables": map[string]any{"id": pay}, "extensions": map[string]any{"dryRun": true}})},
				{"a subscription as a request", post(map[string]any{"query": `subscription S($id: ID!) { paymentUpdated(id: $id) { id } }`, "variables": map[string]any{"id": pay}})},
				{"no credentials", anonymous},
				{"introspection", post(map[string]any{"query": `{ __schema { queryType { name } } }`})},
			}
			for _, r := range requests {
				method, path, hd, body := r.req()
				graph.SetOperationMirror(true)
				gotResp := on.Do(t, method, path, hd, body)
				graph.SetOperationMirror(false)
				wantResp := off.Do(t, method, path, hd, body)
				graph.SetOperationMirror(true)
				if gotResp.Status != wantResp.Status {
					t.Errorf("%s: status %d, want %d", r.name, gotResp.Status, wantResp.Status)
				}
				gotBody, gotShift := normalizeBody(gotResp.Raw)
				wantBody, wantShift := normalizeBody(wantResp.Raw)
				if g, w := headersOf(gotResp.Header, gotShift), headersOf(wantResp.Header, wantShift); g != w {
					t.Errorf("%s: headers\n%s\nwant\n%s", r.name, g, w)
				}
				if gotBody != wantBody {
					t.Errorf("%s: body\n%s\nwant\n%s", r.name, gotBody, wantBody)
				}
				if g, w := logLines(t, logsOn.take(), gotShift), logLines(t, logsOff.take(), wantShift); g != w {
					t.Errorf("%s: log\n%s\nwant\n%s", r.name, g, w)
				}
			}
			if g, w := metricsOf(t, on), metricsOf(t, off); g != w {
				t.Errorf("metrics\n%s\nwant\n%s", g, w)
			}
		})
	}
}

// The rate limits' remaining figures and times to their reset, which
// their refill over time moves between the two gateways' answers.
var remaining = regexp.MustCompile(`(\br=|\bt=|"remaining":|"resetSeconds":)[0-9]+`)

// headersOf is h as text, but for what differs between two servers: the
// date, the remaining rate limits, and the length by as much as
// normalizeBody shifted it.
func headersOf(h http.Header, shift int) string {
	var lines []string
	for k, v := range h {
		switch k {
		case "Date", "X-Request-Id", "Traceparent":
			continue
		case "Content-Length":
			n, _ := strconv.Atoi(v[0])
			v = []string{strconv.Itoa(n + shift)}
		}
		lines = append(lines, k+": "+remaining.ReplaceAllString(strings.Join(v, ", "), "${1}N"))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// normalizeBody is b with its multipart boundaries and remaining rate
// limits taken out, and how many bytes longer that made it.
func normalizeBody(b []byte) (string, int) {
	s := string(b)
	if i := strings.Index(s, "\r\n"); i > 0 && strings.HasPrefix(s, "--") {
		s = strings.ReplaceAll(s, s[:i], "--BOUNDARY")
	}
	s = remaining.ReplaceAllString(s, "${1}N")
	// gqlgen's executor resolves the fields of a list concurrently: the
	// masked paths are noted in the order they complete.
	if i := strings.Index(s, `"maskedPaths":[`); i >= 0 {
		start := i + len(`"maskedPaths":`)
		if end := strings.Index(s[start:], "]]"); end >= 0 {
			var paths [][]any
			if json.Unmarshal([]byte(s[start:start+end+2]), &paths) == nil {
				keys := make([]string, len(paths))
				for j, p := range paths {
					k, _ := json.Marshal(p)
					keys[j] = string(k)
				}
				sort.Strings(keys)
				s = s[:start] + "[" + strings.Join(keys, ",") + "]" + s[start+end+2:]
			}
		}
	}
	return s, len(s) - len(b)
}

// logLines is the log's lines, each without its time, duration and ids,
// its bytes shifted as normalizeBody shifted the body's.
func logLines(t *testing.T, logs string, shift int) string {
	t.Helper()
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(logs), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		for k := range m {
			if k == "time" || k == "request_id" || k == "trace_id" || k == "span_id" || strings.Contains(k, "duration") || strings.HasSuffix(k, "_ms") {
				delete(m, k)
			}
		}
		if n, ok := m["bytes"].(float64); ok {
			m["bytes"] = int(n) + shift
		}
		b, _ := json.Marshal(m)
		out = append(out, string(b))
	}
	return strings.Join(out, "\n")
}

// metricsOf is the gateway's paygraph_ series, but for durations, what
// counts bytes or goroutines of the process, and the loaders' batch sizes
// (how gqlgen's concurrent fields' loads batch hangs on when each
// goroutine runs, on either side).
func metricsOf(t *testing.T, g *testGateway) string {
	t.Helper()
	m, _ := scrape(t, g)
	var lines []string
	for s, v := range m {
		if !strings.HasPrefix(s, "paygraph_") || strings.Contains(s, "seconds") || strings.Contains(s, "bytes") || strings.Contains(s, "in_flight") || strings.HasPrefix(s, "paygraph_loader_batch_size") {
			continue
		}
		lines = append(lines, fmt.Sprintf("%s %v", s, v))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

var _ = httptest.NewRecorder
