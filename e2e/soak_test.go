package e2e

// The soak test: two businesses' clients run a mixed workload against the
// gateway binary (the harness's process) while the sandbox, in this test
// process, injects latency, 5xx, 429, hangs and dropped connections. Every
// answer is checked against the sandbox's own data; the gateway's
// goroutines and heap are read from outside, through its /metrics (after a
// GC forced through its pprof listener). Run it with PAYGRAPH_SOAK=ci
// (bounded, ~20 s) or PAYGRAPH_SOAK=long; without PAYGRAPH_SOAK it is
// skipped.
//
//	PAYGRAPH_SOAK=ci go test -count=1 -run '^TestSoak$' -v ./e2e/

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"paygraph/internal/gqltest"
	"paygraph/internal/testenv"
	"paygraph/sandbox"
)

// soakSize is one size of the soak.
type soakSize struct {
	workersPerBiz int
	duration      time.Duration
	faultRate     float64
	latency       time.Duration
}

func soakSizeFromEnv(t *testing.T) soakSize {
	var s soakSize
	switch mode := os.Getenv("PAYGRAPH_SOAK"); mode {
	case "":
		t.Skip("soak test: set PAYGRAPH_SOAK=ci (bounded) or PAYGRAPH_SOAK=long")
	case "ci":
		s = soakSize{workersPerBiz: 4, duration: 15 * time.Second, faultRate: 0.08, latency: 2 * time.Millisecond}
	case "long":
		s = soakSize{workersPerBiz: 12, duration: 3 * time.Minute, faultRate: 0.08, latency: 2 * time.Millisecond}
	default:
		t.Fatalf("PAYGRAPH_SOAK=%q: want ci or long", mode)
	}
	if d, err := time.ParseDuration(os.Getenv("PAYGRAPH_SOAK_DURATION")); err == nil && d > 0 {
		s.duration = d
	}
	return s
}

// soakConnCounter counts the connections a listener has open.
type soakConnCounter struct {
	net.Listener
	open, peak, total atomic.Int64
}

func (l *soakConnCounter) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	n := l.open.Add(1)
	l.total.Add(1)
	for p := l.peak.Load(); n > p && !l.peak.CompareAndSwap(p, n); p = l.peak.Load() {
	}
	return &soakConn{Conn: c, l: l}, nil
}

type soakConn struct {
	net.Conn
	l    *soakConnCounter
	once sync.Once
}

func (c *soakConn) Close() error {
	c.once.Do(func() { c.l.open.Add(-1) })
	return c.Conn.Close()
}

// soakStats gathers the figures of the run.
type soakStats struct {
	mu          sync.Mutex
	requests    int
	errsByCode  map[string]int
	latencies   []time.Duration
	wrong       int
	crossTenant int
	walks       int
	retries     int
	failures    []string
}

func (s *soakStats) fail(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.wrong++
	if len(s.failures) < 20 {
		s.failures = append(s.failures, fmt.Sprintf(format, args...))
	}
}

func (s *soakStats) cross(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.crossTenant++
	if len(s.failures) < 20 {
		s.failures = append(s.failures, "CROSS-TENANT: "+fmt.Sprintf(format, args...))
	}
}

// soakTenant is one business as its client sees it, with the sandbox's
// data as the expected answers.
type soakTenant struct {
	biz      sandbox.Business
	payments []sandbox.Payment
	byID     map[string]sandbox.Payment
	links    []sandbox.PaymentLink
	sessions []sandbox.CheckoutSession
	// ids of this business (payments, links, sessions, references), to
	// spot them in another business's answers
	ids map[string]bool
}

func newSoakTenant(sb *sandbox.Server, b sandbox.Business) *soakTenant {
	t := &soakTenant{biz: b, payments: sb.Payments(b.APIKey), links: sb.PaymentLinks(b.APIKey),
		sessions: sb.CheckoutSessions(b.APIKey), byID: map[string]sandbox.Payment{}, ids: map[string]bool{}}
	for _, p := range t.payments {
		t.byID[p.ID] = p
		t.ids[p.ID] = true
	}
	for _, l := range t.links {
		t.ids[l.ID] = true
	}
	for _, s := range t.sessions {
		t.ids[s.ID] = true
		t.ids[s.Reference] = true
	}
	return t
}

func soakTaka(p int64) string {
	sign := ""
	if p < 0 {
		sign, p = "-", -p
	}
	return fmt.Sprintf("%s%d.%02d", sign, p/100, p%100)
}

func soakNullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

const soakPaymentFields = `id status amount { amount paisa currency } transactionId paymentMethod customer { name email phone address city } createdAt updatedAt`
const soakListFields = `id status amount { amount paisa currency } transactionId paymentMethod customer { name email phone } createdAt updatedAt`

// soakPaymentJSON is the expected JSON of a payment with soakPaymentFields
// (withAddress) or soakListFields.
func soakPaymentJSON(p sandbox.Payment, withAddress bool) map[string]any {
	c := map[string]any{"name": p.Customer.Name, "email": p.Customer.Email, "phone": p.Customer.Phone}
	if withAddress {
		c["address"] = p.Customer.Address
		c["city"] = nil
	}
	return map[string]any{
		"id": p.ID, "status": p.Status,
		"amount":        map[string]any{"amount": soakTaka(p.AmountPaisa), "paisa": float64(p.AmountPaisa), "currency": p.Currency},
		"transactionId": soakNullable(p.TransactionID), "paymentMethod": soakNullable(p.PaymentMethod),
		"customer": c, "createdAt": p.CreatedAt, "updatedAt": p.UpdatedAt,
	}
}

const soakLinkFields = `id url slug title description amount { amount paisa currency } isReusable isActive currentUses maxUses expiresAt successUrl createdAt updatedAt`

func soakLinkJSON(l sandbox.PaymentLink) map[string]any {
	var maxUses, expires any
	if l.MaxUses != nil {
		maxUses = float64(*l.MaxUses)
	}
	if l.ExpiresAt != nil {
		expires = *l.ExpiresAt
	}
	return map[string]any{
		"id": l.ID, "url": l.URL, "slug": l.Slug, "title": l.Title, "description": soakNullable(l.Description),
		"amount":     map[string]any{"amount": soakTaka(l.AmountPaisa), "paisa": float64(l.AmountPaisa), "currency": l.Currency},
		"isReusable": l.IsReusable, "isActive": l.IsActive, "currentUses": float64(l.CurrentUses),
		"maxUses": maxUses, "expiresAt": expires, "successUrl": soakNullable(l.SuccessURL),
		"createdAt": l.CreatedAt, "updatedAt": l.UpdatedAt,
	}
}

const soakSessionFields = `sessionId reference paymentId status paymentStatus amount { amount paisa currency } subtotal { amount paisa }
	customer { name email phone address city } successUrl cancelUrl transactionId paymentMethod metadata { key value }
	createdAt updatedAt payment { id status amount { paisa } }`

func (t *soakTenant) sessionJSON(s sandbox.CheckoutSession) map[string]any {
	meta := slices.Clone(s.MetaData)
	sort.Slice(meta, func(i, j int) bool { return meta[i].Key < meta[j].Key })
	md := make([]any, len(meta))
	for i, m := range meta {
		md[i] = map[string]any{"key": m.Key, "value": m.Value}
	}
	p := t.byID[s.PaymentID]
	return map[string]any{
		"sessionId": s.ID, "reference": s.Reference, "paymentId": s.PaymentID, "status": s.Status, "paymentStatus": s.PaymentStatus,
		"amount":   map[string]any{"amount": s.Amount, "paisa": float64(s.AmountPaisa), "currency": s.Currency},
		"subtotal": map[string]any{"amount": s.Subtotal, "paisa": float64(s.SubtotalPaisa)},
		"customer": map[string]any{"name": s.Customer.Name, "email": s.Customer.Email, "phone": s.Customer.Phone,
			"address": s.Customer.Address, "city": s.Customer.City},
		"successUrl": soakNullable(s.SuccessURL), "cancelUrl": soakNullable(s.CancelURL),
		"transactionId": s.TransactionID, "paymentMethod": soakNullable(s.PaymentMethod),
		"metadata": md, "createdAt": s.CreatedAt, "updatedAt": s.UpdatedAt,
		"payment": map[string]any{"id": p.ID, "status": p.Status, "amount": map[string]any{"paisa": float64(p.AmountPaisa)}},
	}
}

type soakAnswer struct {
	Data   any             `json:"data"`
	Errors []gqltest.Error `json:"errors"`
	raw    []byte
}

// soakClient is one worker: one business, its own connections.
type soakClient struct {
	url    string
	hc     *http.Client
	me     *soakTenant
	other  *soakTenant
	rng    *rand.Rand
	stats  *soakStats
	status []string
}

func (c *soakClient) do(body map[string]any) (*soakAnswer, bool) {
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, c.url, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", c.me.biz.APIKey)
	req.Header.Set("x-api-secret", c.me.biz.APISecret)
	start := time.Now()
	resp, err := c.hc.Do(req)
	if err != nil {
		c.stats.fail("transport error talking to the gateway: %v", err)
		return nil, false
	}
	out, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	elapsed := time.Since(start)
	ans := &soakAnswer{raw: out}
	if err != nil || json.Unmarshal(out, ans) != nil {
		c.stats.fail("status %d, unreadable answer %.300q (%v)", resp.StatusCode, out, err)
		return nil, false
	}
	c.stats.mu.Lock()
	c.stats.requests++
	c.stats.latencies = append(c.stats.latencies, elapsed)
	for _, e := range ans.Errors {
		c.stats.errsByCode[e.Code()]++
	}
	c.stats.mu.Unlock()
	if resp.StatusCode != http.StatusOK {
		c.stats.fail("status %d: %.300s", resp.StatusCode, out)
		return nil, false
	}
	c.scanCrossTenant(raw, out)
	return ans, true
}

// scanCrossTenant looks for the other business's ids anywhere in an answer
// (data, messages, extensions), except ids the request itself sent.
func (c *soakClient) scanCrossTenant(request, answer []byte) {
	s := string(answer)
	for _, prefix := range []string{"pay_", "pl_"} {
		for i := 0; ; {
			j := strings.Index(s[i:], prefix)
			if j < 0 {
				break
			}
			k := i + j
			e := k
			for e < len(s) && (s[e] == '_' || s[e] == '-' || s[e] >= '0' && s[e] <= '9' || s[e] >= 'a' && s[e] <= 'z' || s[e] >= 'A' && s[e] <= 'Z') {
				e++
			}
			if id := s[k:e]; c.other.ids[id] && !bytes.Contains(request, []byte(id)) {
				c.stats.cross("%s's answer contains %s of %s: %.300s", c.me.biz.Name, id, c.other.biz.Name, s)
			}
			i = e
		}
	}
	for _, ss := range c.other.sessions {
		if strings.Contains(s, `"`+ss.Reference+`"`) && !bytes.Contains(request, []byte(ss.Reference)) {
			c.stats.cross("%s's answer contains reference %s of %s", c.me.biz.Name, ss.Reference, c.other.biz.Name)
		}
	}
}

var soakAllowedCodes = map[string]bool{"UPSTREAM_ERROR": true, "UPSTREAM_TIMEOUT": true, "RATE_LIMITED": true}

// check compares an answer with the expected data. Errors are allowed
// only with the allowed codes (NOT_FOUND only at the paths in notFound),
// and a null is allowed only where an error explains it; every non-null
// value must be exactly the expected one. It reports whether the answer
// had errors.
func (c *soakClient) check(what string, ans *soakAnswer, want map[string]any, notFound map[string]bool) (hadErrors bool) {
	var errPaths []string
	for _, e := range ans.Errors {
		code := e.Code()
		p := soakPathString(e.Path)
		switch {
		case code == "NOT_FOUND" && notFound[p]:
		case soakAllowedCodes[code]:
			if code == "RATE_LIMITED" && e.Extensions["retryAfter"] != float64(7) {
				c.stats.fail("%s: RATE_LIMITED without the REST API's retryAfter 7: %+v", what, e)
			}
		default:
			c.stats.fail("%s: error %q code %q at %s not allowed: %.300s", what, e.Message, code, p, ans.raw)
			continue
		}
		errPaths = append(errPaths, p)
	}
	for p := range notFound {
		if !slices.Contains(errPaths, p) {
			// The other business's record must never be returned.
			got := soakAt(ans.Data, p)
			if got != nil {
				c.stats.cross("%s: %s answered %v where NOT_FOUND was expected", what, p, got)
			} else if len(ans.Errors) == 0 {
				c.stats.fail("%s: %s null without NOT_FOUND", what, p)
			}
		}
	}
	var data map[string]any
	if ans.Data != nil {
		data, _ = ans.Data.(map[string]any)
	}
	if data == nil {
		if len(errPaths) == 0 {
			c.stats.fail("%s: no data and no errors: %.300s", what, ans.raw)
		}
		return true
	}
	c.compare(what, "", data, want, errPaths)
	return len(ans.Errors) > 0
}

func (c *soakClient) compare(what, path string, got, want any, errPaths []string) {
	if got == nil && want != nil {
		for _, ep := range errPaths {
			if ep == path || strings.HasPrefix(ep, path+".") {
				return
			}
		}
		c.stats.fail("%s: null at %s with no error there (want %v)", what, path, want)
		return
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok || len(g) != len(w) {
			c.stats.fail("%s: at %s got %v, want %v", what, path, got, want)
			return
		}
		for k, wv := range w {
			c.compare(what, soakJoin(path, k), g[k], wv, errPaths)
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			c.stats.fail("%s: at %s got %v, want %v", what, path, got, want)
			return
		}
		for i := range w {
			c.compare(what, soakJoin(path, strconv.Itoa(i)), g[i], w[i], errPaths)
		}
	default:
		if !reflect.DeepEqual(got, want) {
			if s, ok := got.(string); ok && c.other.ids[s] {
				c.stats.cross("%s: at %s got %q of the other business", what, path, s)
				return
			}
			c.stats.fail("%s: at %s got %#v, want %#v", what, path, got, want)
		}
	}
}

func soakJoin(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func soakPathString(p []any) string {
	parts := make([]string, len(p))
	for i, v := range p {
		if f, ok := v.(float64); ok {
			parts[i] = strconv.Itoa(int(f))
		} else {
			parts[i] = fmt.Sprint(v)
		}
	}
	return strings.Join(parts, ".")
}

func soakAt(v any, path string) any {
	for _, k := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[k]
		case []any:
			i, _ := strconv.Atoi(k)
			if i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

// walk pages through a filtered list with a random page size per page,
// retrying a failed page with the same cursor, and checks that the pages
// join up to exactly the sandbox's list.
func (c *soakClient) walk() {
	status := c.status[c.rng.IntN(len(c.status))]
	var want []sandbox.Payment
	for _, p := range c.me.payments {
		if status == "" || p.Status == status {
			want = append(want, p)
		}
	}
	var got []string
	after := ""
	for pages := 0; ; pages++ {
		if pages > 2*len(want)+10 {
			c.stats.fail("walk %q does not end", status)
			return
		}
		first := 1 + c.rng.IntN(100)
		vars := map[string]any{"first": first}
		if after != "" {
			vars["after"] = after
		}
		if status != "" {
			vars["status"] = status
		}
		pos := len(got)
		n := min(first, len(want)-pos)
		edges := make([]any, n)
		for i := range n {
			edges[i] = map[string]any{"node": soakPaymentJSON(want[pos+i], false)}
		}
		var conn map[string]any
		for try := 0; ; try++ {
			if try == 30 {
				c.stats.fail("walk %q: page at %d failed 30 times", status, pos)
				return
			}
			if try > 0 {
				c.stats.mu.Lock()
				c.stats.retries++
				c.stats.mu.Unlock()
			}
			ans, ok := c.do(map[string]any{"query": `query($first: Int, $after: String, $status: PaymentStatus) {
				payments(first: $first, after: $after, status: $status) { edges { cursor node { ` + soakListFields + ` } } pageInfo { hasNextPage endCursor } } }`,
				"variables": vars})
			if !ok {
				return
			}
			if len(ans.Errors) > 0 {
				c.check("walk page", ans, nil, nil)
				continue
			}
			data, _ := ans.Data.(map[string]any)
			conn, _ = data["payments"].(map[string]any)
			if conn == nil {
				c.stats.fail("walk: no payments in %.300s", ans.raw)
				return
			}
			break
		}
		gotEdges, _ := conn["edges"].([]any)
		if len(gotEdges) != n {
			c.stats.fail("walk %q at %d, first %d: %d edges, want %d", status, pos, first, len(gotEdges), n)
			return
		}
		for i, e := range gotEdges {
			em, _ := e.(map[string]any)
			cur, _ := em["cursor"].(string)
			if cur == "" {
				c.stats.fail("walk: edge without a cursor")
				return
			}
			c.compare("walk edge", "node", em["node"], edges[i].(map[string]any)["node"], nil)
			node, _ := em["node"].(map[string]any)
			id, _ := node["id"].(string)
			got = append(got, id)
		}
		pi, _ := conn["pageInfo"].(map[string]any)
		hasNext, _ := pi["hasNextPage"].(bool)
		if hasNext != (len(got) < len(want)) {
			c.stats.fail("walk %q at %d: hasNextPage %v with %d of %d walked", status, pos, hasNext, len(got), len(want))
			return
		}
		if !hasNext {
			break
		}
		after, _ = pi["endCursor"].(string)
	}
	wantIDs := make([]string, len(want))
	for i, p := range want {
		wantIDs[i] = p.ID
	}
	if !slices.Equal(got, wantIDs) {
		c.stats.fail("walk %q: walked %d ids, want %d: skipped or repeated payments", status, len(got), len(wantIDs))
	}
	c.stats.mu.Lock()
	c.stats.walks++
	c.stats.mu.Unlock()
}

func (c *soakClient) payment() {
	if c.rng.IntN(5) == 0 { // the other business's payment: NOT_FOUND, never its data
		p := c.other.payments[c.rng.IntN(len(c.other.payments))]
		if ans, ok := c.do(map[string]any{"query": `query($id: ID!) { payment(id: $id) { ` + soakPaymentFields + ` } }`,
			"variables": map[string]any{"id": p.ID}}); ok {
			c.check("other's payment", ans, map[string]any{"payment": nil}, map[string]bool{"payment": true})
		}
		return
	}
	p := c.me.payments[c.rng.IntN(len(c.me.payments))]
	if ans, ok := c.do(map[string]any{"query": `query($id: ID!) { payment(id: $id) { ` + soakPaymentFields + ` } }`,
		"variables": map[string]any{"id": p.ID}}); ok {
		c.check("payment", ans, map[string]any{"payment": soakPaymentJSON(p, true)}, nil)
	}
}

func (c *soakClient) link() {
	if c.rng.IntN(5) == 0 {
		l := c.other.links[c.rng.IntN(len(c.other.links))]
		if ans, ok := c.do(map[string]any{"query": `query($id: ID!) { paymentLink(id: $id) { ` + soakLinkFields + ` } }`,
			"variables": map[string]any{"id": l.ID}}); ok {
			c.check("other's link", ans, map[string]any{"paymentLink": nil}, map[string]bool{"paymentLink": true})
		}
		return
	}
	l := c.me.links[c.rng.IntN(len(c.me.links))]
	if ans, ok := c.do(map[string]any{"query": `query($id: ID!) { paymentLink(id: $id) { ` + soakLinkFields + ` } }`,
		"variables": map[string]any{"id": l.ID}}); ok {
		c.check("link", ans, map[string]any{"paymentLink": soakLinkJSON(l)}, nil)
	}
}

func (c *soakClient) session() {
	s := c.me.sessions[c.rng.IntN(len(c.me.sessions))]
	if c.rng.IntN(6) == 0 {
		o := c.other.sessions[c.rng.IntN(len(c.other.sessions))]
		if ans, ok := c.do(map[string]any{"query": `query($id: String!) { checkoutSession(id: $id) { sessionId reference } }`,
			"variables": map[string]any{"id": o.Reference}}); ok {
			c.check("other's session", ans, map[string]any{"checkoutSession": nil}, map[string]bool{"checkoutSession": true})
		}
		return
	}
	// By id, by reference, or both at once (the loader shares one fetch).
	want := c.me.sessionJSON(s)
	switch c.rng.IntN(3) {
	case 0, 1:
		key := s.ID
		if c.rng.IntN(2) == 0 {
			key = s.Reference
		}
		if ans, ok := c.do(map[string]any{"query": `query($id: String!) { checkoutSession(id: $id) { ` + soakSessionFields + ` } }`,
			"variables": map[string]any{"id": key}}); ok {
			c.check("session", ans, map[string]any{"checkoutSession": want}, nil)
		}
	case 2:
		if ans, ok := c.do(map[string]any{"query": `query($a: String!, $b: String!) { a: checkoutSession(id: $a) { ` + soakSessionFields + ` }
			b: checkoutSession(id: $b) { ` + soakSessionFields + ` } }`,
			"variables": map[string]any{"a": s.ID, "b": s.Reference}}); ok {
			c.check("session pair", ans, map[string]any{"a": want, "b": want}, nil)
		}
	}
}

func (c *soakClient) nodes() {
	n := 1 + c.rng.IntN(12)
	ids := make([]string, n)
	want := make([]any, n)
	notFound := map[string]bool{}
	for i := range ids {
		switch r := c.rng.IntN(10); {
		case r == 0:
			ids[i] = c.other.payments[c.rng.IntN(len(c.other.payments))].ID
			want[i] = nil
			notFound["nodes."+strconv.Itoa(i)] = true
		case r < 7:
			p := c.me.payments[c.rng.IntN(len(c.me.payments))]
			ids[i] = p.ID
			want[i] = map[string]any{"__typename": "Payment", "id": p.ID, "status": p.Status, "amount": map[string]any{"paisa": float64(p.AmountPaisa)}}
		default:
			l := c.me.links[c.rng.IntN(len(c.me.links))]
			ids[i] = l.ID
			want[i] = map[string]any{"__typename": "PaymentLink", "id": l.ID, "url": l.URL, "amount": map[string]any{"paisa": float64(l.AmountPaisa)}}
		}
	}
	if ans, ok := c.do(map[string]any{"query": `query($ids: [ID!]!) { nodes(ids: $ids) { __typename id
		... on Payment { status amount { paisa } } ... on PaymentLink { url amount { paisa } } } }`,
		"variables": map[string]any{"ids": ids}}); ok {
		c.check("nodes", ans, map[string]any{"nodes": want}, notFound)
	}
}

// apq registers one of a few query texts with its hash, then sends the
// hash alone.
func (c *soakClient) apq() {
	q := fmt.Sprintf(`query SoakAPQ%d($id: ID!) { payment(id: $id) { id status amount { paisa } } }`, c.rng.IntN(20))
	sum := sha256.Sum256([]byte(q))
	ext := map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": hex.EncodeToString(sum[:])}}
	for _, withQuery := range []bool{true, false} {
		p := c.me.payments[c.rng.IntN(len(c.me.payments))]
		body := map[string]any{"extensions": ext, "variables": map[string]any{"id": p.ID}}
		if withQuery {
			body["query"] = q
		}
		ans, ok := c.do(body)
		if !ok {
			return
		}
		c.check("apq", ans, map[string]any{"payment": map[string]any{"id": p.ID, "status": p.Status,
			"amount": map[string]any{"paisa": float64(p.AmountPaisa)}}}, nil)
	}
}

func soakPercentile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[min(len(d)-1, int(float64(len(d))*q))]
}

// soakGateway is the gateway process as the soak reads it from outside.
type soakGateway struct {
	*proc
	pprof string // http://<PPROF_ADDR>
}

// figures forces a GC in the gateway (pprof's heap profile with gc=1) and
// then reads its goroutines and in-use heap from /metrics.
func (g *soakGateway) figures(t *testing.T) (goroutines int, heap int64) {
	t.Helper()
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := hc.Get(g.pprof + "/debug/pprof/heap?gc=1")
	if err != nil {
		t.Fatalf("forcing a GC in the gateway: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	m := g.Metrics()
	n, ok1 := metricValue(m, "go_goroutines")
	h, ok2 := metricValue(m, "go_memstats_heap_inuse_bytes")
	if !ok1 || !ok2 {
		t.Fatalf("no go_goroutines or go_memstats_heap_inuse_bytes in the gateway's /metrics:\n%.2000s", m)
	}
	return int(n), int64(h)
}

// goroutinesAtMost waits up to 5 s for the gateway's goroutines to fall
// to limit and returns the last count.
func (g *soakGateway) goroutinesAtMost(t *testing.T, limit func() int) int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, _ := g.figures(t)
		if n <= limit() || time.Now().After(deadline) {
			return n
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// goroutineDump is the gateway's goroutine profile, for a failure message.
// maxHousekeeping is the most idle-connection cleaners fasthttp keeps
// for the soak's two merchants (two host clients each).
const maxHousekeeping = 4

// transportHousekeeping counts the gateway's goroutines that are fasthttp's
// idle-connection cleaners (from the goroutine profile's "N @ ..." groups).
func (g *soakGateway) transportHousekeeping() int {
	n, group := 0, 0 // group: the goroutines of the stack being read
	for line := range strings.Lines(g.goroutineDump()) {
		var k int
		if _, err := fmt.Sscanf(line, "%d @", &k); err == nil {
			group = k
			continue
		}
		if strings.Contains(line, "fasthttp.(*HostClient).connsCleaner") {
			n += group
			group = 0 // a stack counted once
		}
	}
	return n
}

func (g *soakGateway) goroutineDump() string {
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := hc.Get(g.pprof + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func TestSoak(t *testing.T) {
	size := soakSizeFromEnv(t)

	// The sandbox, on real TCP, counting its open connections.
	sb := sandbox.New(sandbox.Options{Latency: size.latency})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	upstream := &soakConnCounter{Listener: ln}
	sbSrv := &http.Server{Handler: sb, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = sbSrv.Serve(upstream) }()
	t.Cleanup(func() { _ = sbSrv.Close() })

	// The gateway binary as production runs it, with a pprof listener to
	// force a GC before each heap reading.
	const pool = 16
	pprofAddr := "127.0.0.1:" + strconv.Itoa(testenv.FreeLoopbackPort(t))
	gw := &soakGateway{proc: startGateway(t, map[string]string{
		"REST_BASE_URL": "http://" + ln.Addr().String(), "REST_TIMEOUT": "300ms",
		"REST_MAX_INFLIGHT": strconv.Itoa(pool), "REST_MAX_CONCURRENCY": "8", "PPROF_ADDR": pprofAddr,
		// The rate limits off: the load on one merchant is the point here.
		"RATE_LIMIT_REST_CALLS_PER_SECOND": "0", "RATE_LIMIT_REQUESTS_PER_SECOND": "0",
	}), pprof: "http://" + pprofAddr}
	gwURL := gw.URL + "/graphql"
	baseGoroutines, baseHeap := gw.figures(t)
	baseOpen := int(upstream.open.Load())

	biz := sb.Businesses()
	tenants := []*soakTenant{newSoakTenant(sb, biz[0]), newSoakTenant(sb, biz[1])}
	// Merchants the REST API has accepted, as a running gateway's are,
	// before the faults: the soak's RATE_LIMITED must be the REST API's.
	for _, b := range biz[:2] {
		r := gw.do(context.Background(), gqlReq{Query: `{ payments(first: 1) { nodes { id } } }`, Header: gqltest.Headers(b.APIKey, b.APISecret)})
		if r.Outcome() != "ok" {
			t.Fatalf("%s's first query: %s", b.Name, r.Outcome())
		}
	}
	sb.SetFaults(sandbox.RandomFaults(20261101, size.faultRate,
		sandbox.Fault500, sandbox.Fault502, sandbox.Fault503, sandbox.Fault429, sandbox.FaultHang, sandbox.FaultDrop))

	stats := &soakStats{errsByCode: map[string]int{}}
	statuses := append([]string{"", ""}, sandbox.Statuses()...)
	deadline := time.Now().Add(size.duration)
	var wg sync.WaitGroup
	var clients []*soakClient
	for ti, me := range tenants {
		for w := range size.workersPerBiz {
			c := &soakClient{url: gwURL, me: me, other: tenants[1-ti], stats: stats, status: statuses,
				rng: rand.New(rand.NewPCG(uint64(ti), uint64(w))),
				hc:  &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2}, Timeout: 30 * time.Second}}
			clients = append(clients, c)
			wg.Add(1)
			go func() {
				defer wg.Done()
				ops := []func(){c.walk, c.payment, c.payment, c.link, c.session, c.session, c.nodes, c.nodes, c.apq}
				for time.Now().Before(deadline) {
					ops[c.rng.IntN(len(ops))]()
				}
			}()
		}
	}
	wg.Wait()
	sb.SetFaults(nil)
	for _, c := range clients {
		c.hc.CloseIdleConnections()
	}

	// Every REST call carried one business's own key and secret.
	secretOf := map[string]string{}
	for _, b := range biz {
		secretOf[b.APIKey] = b.APISecret
	}
	calls := sb.Calls()
	faults := map[string]int{}
	for _, call := range calls {
		if s, ok := secretOf[call.APIKey]; !ok || s != call.APISecret {
			stats.cross("REST call with key %q and a secret that is not its own", call.APIKey)
		}
		if call.Fault != sandbox.FaultNone {
			faults[call.Fault.String()]++
		}
	}
	sb.ResetCalls()

	slices.Sort(stats.latencies)
	codes := make([]string, 0, len(stats.errsByCode))
	for c, n := range stats.errsByCode {
		codes = append(codes, fmt.Sprintf("%s=%d", c, n))
	}
	sort.Strings(codes)
	faultList := make([]string, 0, len(faults))
	for f, n := range faults {
		faultList = append(faultList, fmt.Sprintf("%s=%d", f, n))
	}
	sort.Strings(faultList)

	// Upstream connections: once the load stops, no more than the pool.
	idleDeadline := time.Now().Add(5 * time.Second)
	for upstream.open.Load() > pool && time.Now().Before(idleDeadline) {
		time.Sleep(20 * time.Millisecond)
	}
	openAfter := upstream.open.Load()
	if openAfter > pool {
		t.Errorf("%d upstream connections open after the soak, more than the pool of %d", openAfter, pool)
	}
	// The gateway's goroutines with the load stopped: the baseline plus
	// what its idle upstream connections hold (2 each: the client's read
	// and write loops), plus 4 of slack.
	idleLimit := func() int { return baseGoroutines + 2*(int(upstream.open.Load())-baseOpen) + 4 }
	running := gw.goroutinesAtMost(t, idleLimit)
	limitIdle := idleLimit()
	if running > limitIdle {
		t.Errorf("%d goroutines in the gateway after the soak with its connections idle, more than %d:\n%s", running, limitIdle, gw.goroutineDump())
	}

	t.Logf("soak figures: mode=%s workers=%d duration=%s requests=%d errors{%s} p50=%s p99=%s walks=%d page-retries=%d wrong=%d cross-tenant=%d | REST calls=%d injected{%s} | upstream conns peak=%d total=%d open-after=%d (pool %d)",
		os.Getenv("PAYGRAPH_SOAK"), len(clients), size.duration, stats.requests, strings.Join(codes, " "),
		soakPercentile(stats.latencies, 0.50).Round(time.Microsecond), soakPercentile(stats.latencies, 0.99).Round(time.Microsecond),
		stats.walks, stats.retries, stats.wrong, stats.crossTenant,
		len(calls), strings.Join(faultList, " "), upstream.peak.Load(), upstream.total.Load(), openAfter, pool)

	// Close the REST API's connections (the gateway's idle pool ends with
	// them): the gateway's goroutines and heap return to the baseline.
	_ = sbSrv.Close()
	for upstream.open.Load() > 0 && time.Now().Before(idleDeadline.Add(5*time.Second)) {
		time.Sleep(20 * time.Millisecond)
	}
	// fasthttp keeps an idle-connection cleaner a host client (two a
	// merchant's REST pool: a record's and a list page's body limits)
	// until 90 s after its connections closed: housekeeping, at most
	// maxHousekeeping for the soak's two merchants, never one a call.
	var after, housekeeping int
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		housekeeping = gw.transportHousekeeping()
		after, _ = gw.figures(t)
		if after <= baseGoroutines+1+housekeeping || time.Now().After(deadline) {
			break
		}
	}
	if housekeeping > maxHousekeeping {
		t.Errorf("%d housekeeping goroutines of the REST transport, more than %d:\n%s", housekeeping, maxHousekeeping, gw.goroutineDump())
	}
	_, heapAfter := gw.figures(t)
	t.Logf("leak check (gateway process): goroutines baseline=%d with-idle-upstream=%d (limit %d) after=%d (of them the REST transport's housekeeping %d); heap in use baseline=%.1f MiB after=%.1f MiB",
		baseGoroutines, running, limitIdle, after, housekeeping, float64(baseHeap)/(1<<20), float64(heapAfter)/(1<<20))
	if after > baseGoroutines+1+housekeeping {
		t.Errorf("the gateway's goroutines did not return to the baseline %d (now %d):\n%s", baseGoroutines, after, gw.goroutineDump())
	}
	// The gateway's bounded caches (APQ, parsed queries) stay referenced;
	// anything unbounded would show here.
	if heapAfter > baseHeap+16<<20 {
		t.Errorf("the gateway's heap in use grew from %d to %d bytes", baseHeap, heapAfter)
	}
	if stats.wrong > 0 || stats.crossTenant > 0 {
		t.Errorf("%d wrong answers, %d cross-tenant answers; first ones:\n%s", stats.wrong, stats.crossTenant, strings.Join(stats.failures, "\n"))
	}
	if stats.requests == 0 || stats.walks == 0 {
		t.Errorf("the soak made %d requests and %d walks", stats.requests, stats.walks)
	}
}
