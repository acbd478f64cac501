package e2e

// restFake is the REST API the gateway process talks to: the sandbox's
// data and handlers (paygraph/sandbox, an independent reading of
// shared/rest-api.md) behind a wrapper that knows two merchants by
// credential pairs of its own, counts every call, records the peak number
// of calls in flight (overall and per merchant), adds latency, and can be
// told per test to answer some calls in a hostile way: 500 or a hang for
// given ids (the sandbox's fault hook), an endless or huge body, a record
// with another id, or a next_cursor that does not advance.

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"paygraph/sandbox"
)

// merchant is one tenant as the gateway's callers know it.
type merchant struct {
	Name        string // "A" or "B"
	Key, Secret string
	biz         sandbox.Business // the sandbox business behind it
}

// Header is the merchant's credential pair as request headers.
func (m merchant) Header() http.Header {
	h := http.Header{}
	h.Set("x-api-key", m.Key)
	h.Set("x-api-secret", m.Secret)
	return h
}

// The merchants' credentials are deliberately not shaped like the REST
// API's samples (ak_..., sk_...): the gateway must keep a caller's own pair
// out of its logs and metrics whatever its shape. Each is also a valid
// GraphQL name and X-Request-Id, which an attacker may send as such.
const (
	keyA    = "PadmaKeyE2e_q7Lx2Vm9"
	secretA = "PadmaSecretE2e_Zr4Tw8NyK3cP"
	keyB    = "JamunaKeyE2e_h3Rt6Ws1"
	secretB = "JamunaSecretE2e_Bx5Qe9LmU2dV"
)

// restCall is one request the fake received.
type restCall struct {
	Merchant string // "A", "B", or "" for an unknown pair
	Route    string // a sandbox.Route* constant, "" for another path
	ID       string // the unescaped id of a detail route
	Cursor   string // the list's cursor parameter
	Limit    string // the list's limit parameter
}

// restFake is an httptest server; see the file comment.
type restFake struct {
	URL  string
	A, B merchant
	sb   *sandbox.Server

	latency  atomic.Int64
	override atomic.Pointer[func(restCall) http.HandlerFunc]
	served   atomic.Int64 // body bytes written by hostile handlers

	mu         sync.Mutex
	calls      []restCall
	inflight   int
	peak       int
	inflightBy map[string]int
	peakBy     map[string]int
}

func newRESTFake(t testing.TB) *restFake {
	t.Helper()
	sb := sandbox.New(sandbox.Options{})
	biz := sb.Businesses()
	f := &restFake{
		sb:         sb,
		A:          merchant{Name: "A", Key: keyA, Secret: secretA, biz: biz[0]},
		B:          merchant{Name: "B", Key: keyB, Secret: secretB, biz: biz[1]},
		inflightBy: map[string]int{},
		peakBy:     map[string]int{},
	}
	srv := httptest.NewUnstartedServer(f)
	srv.Config.ReadHeaderTimeout = 10 * time.Second
	srv.Start()
	t.Cleanup(srv.Close)
	f.URL = srv.URL
	return f
}

// ServeHTTP counts the call, waits the latency, and answers it: with the
// override's handler when it has one for the call, else the sandbox's
// (credentials swapped for the sandbox business's pair).
func (f *restFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c := f.describe(r)
	f.enter(c)
	defer f.leave(c)
	if d := time.Duration(f.latency.Load()); d > 0 {
		tm := time.NewTimer(d)
		select {
		case <-tm.C:
		case <-r.Context().Done():
			tm.Stop()
			return
		}
	}
	if o := f.override.Load(); o != nil {
		if h := (*o)(c); h != nil {
			h(w, r)
			return
		}
	}
	m := f.merchant(c.Merchant)
	if m == nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":"Invalid API credentials"}`)
		return
	}
	r2 := r.Clone(r.Context())
	r2.Header.Set("x-api-key", m.biz.APIKey)
	r2.Header.Set("x-api-secret", m.biz.APISecret)
	f.sb.ServeHTTP(w, r2)
}

func (f *restFake) merchant(name string) *merchant {
	switch name {
	case "A":
		return &f.A
	case "B":
		return &f.B
	}
	return nil
}

func (f *restFake) describe(r *http.Request) restCall {
	c := restCall{}
	key, secret := r.Header.Values("x-api-key"), r.Header.Values("x-api-secret")
	if len(key) == 1 && len(secret) == 1 {
		switch {
		case key[0] == f.A.Key && secret[0] == f.A.Secret:
			c.Merchant = "A"
		case key[0] == f.B.Key && secret[0] == f.B.Secret:
			c.Merchant = "B"
		}
	}
	c.Route, c.ID = routeOf(r.URL.EscapedPath())
	if c.Route == sandbox.RoutePayments {
		q := r.URL.Query()
		c.Cursor, c.Limit = q.Get("cursor"), q.Get("limit")
	}
	return c
}

// routeOf maps an escaped path to its sandbox route and unescaped id.
func routeOf(escaped string) (route, id string) {
	rest, ok := strings.CutPrefix(escaped, "/api/v1/")
	if !ok {
		return "", ""
	}
	seg := strings.Split(rest, "/")
	switch {
	case len(seg) == 1 && seg[0] == "payments":
		return sandbox.RoutePayments, ""
	case len(seg) == 2 && seg[0] == "payments":
		route = sandbox.RoutePayment
	case len(seg) == 2 && seg[0] == "payment-links":
		route = sandbox.RoutePaymentLink
	case len(seg) == 3 && seg[0] == "checkout" && seg[1] == "sessions":
		route = sandbox.RouteCheckoutSession
	default:
		return "", ""
	}
	id, err := url.PathUnescape(seg[len(seg)-1])
	if err != nil {
		return route, ""
	}
	return route, id
}

func (f *restFake) enter(c restCall) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, c)
	f.inflight++
	f.peak = max(f.peak, f.inflight)
	f.inflightBy[c.Merchant]++
	f.peakBy[c.Merchant] = max(f.peakBy[c.Merchant], f.inflightBy[c.Merchant])
}

func (f *restFake) leave(c restCall) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inflight--
	f.inflightBy[c.Merchant]--
}

// Reset forgets the calls and peaks so far (not the calls in flight).
func (f *restFake) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = nil
	f.peak = f.inflight
	clear(f.peakBy)
	for k, v := range f.inflightBy {
		f.peakBy[k] = v
	}
	f.served.Store(0)
}

// Calls returns the number of calls so far that match (nil: all).
func (f *restFake) Calls(match func(restCall) bool) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if match == nil || match(c) {
			n++
		}
	}
	return n
}

// CallsBy returns the number of calls made with a merchant's pair.
func (f *restFake) CallsBy(m string) int {
	return f.Calls(func(c restCall) bool { return c.Merchant == m })
}

// Peak is the most calls that were in flight at once since the last
// Reset; PeakBy the same for one merchant's pair.
func (f *restFake) Peak() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.peak
}

func (f *restFake) PeakBy(m string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.peakBy[m]
}

// SetLatency delays every answer by d (the call counts as in flight
// meanwhile).
func (f *restFake) SetLatency(d time.Duration) { f.latency.Store(int64(d)) }

// Fail makes the sandbox inject a fault (sandbox.Fault500, FaultHang, ...)
// into the calls for which fault returns one; nil stops it.
func (f *restFake) Fail(fault func(restCall) sandbox.Fault) {
	if fault == nil {
		f.sb.SetFaults(nil)
		return
	}
	f.sb.SetFaults(func(sc sandbox.Call) sandbox.Fault {
		c := restCall{}
		c.Route, c.ID = routeOf(sc.EscapedPath)
		if q, err := url.ParseQuery(sc.RawQuery); err == nil {
			c.Cursor, c.Limit = q.Get("cursor"), q.Get("limit")
		}
		c.Merchant = "?" // the sandbox sees its own pairs
		return fault(c)
	})
}

// FailIDs answers every call for one of ids with the fault.
func (f *restFake) FailIDs(fault sandbox.Fault, ids ...string) {
	set := map[string]bool{}
	for _, id := range ids {
		set[id] = true
	}
	f.Fail(func(c restCall) sandbox.Fault {
		if c.ID != "" && set[c.ID] {
			return fault
		}
		return sandbox.FaultNone
	})
}

// Override answers the calls for which h returns a handler with it; nil
// stops overriding.
func (f *restFake) Override(h func(restCall) http.HandlerFunc) {
	if h == nil {
		f.override.Store(nil)
		return
	}
	f.override.Store(&h)
}

// Served is the number of body bytes the hostile handlers wrote since the
// last Reset.
func (f *restFake) Served() int64 { return f.served.Load() }

// record is the sandbox's own JSON answer to a GET for m, as a generic
// object (numbers kept as their exact text).
func (f *restFake) record(m *merchant, path string) map[string]any {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Header.Set("x-api-key", m.biz.APIKey)
	req.Header.Set("x-api-secret", m.biz.APISecret)
	rec := httptest.NewRecorder()
	f.sb.ServeHTTP(rec, req)
	dec := json.NewDecoder(rec.Body)
	dec.UseNumber()
	var out map[string]any
	if err := dec.Decode(&out); err != nil || rec.Code != http.StatusOK {
		panic("sandbox answer to " + path + ": " + rec.Body.String())
	}
	return out
}

// ---- hostile answers ----

func writeJSONBody(w http.ResponseWriter, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(body)
}

// endlessBody answers 200 with a JSON document that never ends: a payment
// whose customer name goes on (detail routes) or a list whose data array
// goes on (the list route), until the gateway hangs up.
func (f *restFake) endlessBody(c restCall) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		var head, chunk []byte
		if c.Route == sandbox.RoutePayments {
			first := f.record(&f.A, "/api/v1/payments?limit=1")["data"].([]any)[0]
			item, _ := json.Marshal(first)
			head = []byte(`{"data":[`)
			chunk = bytes.Repeat(append(item, ','), max(1, (32<<10)/(len(item)+1)))
		} else {
			head = []byte(`{"id":"` + c.ID + `","status":"SUCCEEDED","amount":10.00,"currency":"BDT","customer":{"name":"`)
			chunk = bytes.Repeat([]byte("a"), 32<<10)
		}
		n, _ := w.Write(head)
		f.served.Add(int64(n))
		for r.Context().Err() == nil {
			n, err := w.Write(chunk)
			f.served.Add(int64(n))
			if err != nil {
				return
			}
		}
	}
}

// paddedPayment answers a detail call with the valid record of the id
// asked (merchant A's), its customer name padded so that the body is
// about size bytes: a well-formed but large answer.
func (f *restFake) paddedPayment(size int) func(restCall) http.HandlerFunc {
	var mu sync.Mutex
	cache := map[string][]byte{}
	return func(c restCall) http.HandlerFunc {
		if c.Route != sandbox.RoutePayment {
			return nil
		}
		return func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			body, ok := cache[c.ID]
			if !ok {
				rec := f.record(&f.A, "/api/v1/payments/"+url.PathEscape(c.ID))
				base, _ := json.Marshal(rec)
				cust := rec["customer"].(map[string]any)
				cust["name"] = strings.Repeat("n", max(0, size-len(base)))
				body, _ = json.Marshal(rec)
				cache[c.ID] = body
			}
			mu.Unlock()
			writeJSONBody(w, body)
			f.served.Add(int64(len(body)))
		}
	}
}

// otherRecord answers a detail call for id with the (valid) record of
// another payment: the REST API got its lookup wrong.
func (f *restFake) otherRecord(asked, given string) func(restCall) http.HandlerFunc {
	return func(c restCall) http.HandlerFunc {
		if c.Route != sandbox.RoutePayment || c.ID != asked {
			return nil
		}
		return func(w http.ResponseWriter, r *http.Request) {
			body, _ := json.Marshal(f.record(&f.A, "/api/v1/payments/"+given))
			writeJSONBody(w, body)
		}
	}
}

// stuckCursor answers every list call with three of merchant A's
// payments, has_more true and next_cursor "stuck-e2e", whatever cursor it
// was sent: from the second page on, the cursor does not advance.
const stuckCursorValue = "stuck-e2e"

func (f *restFake) stuckCursor(c restCall) http.HandlerFunc {
	if c.Route != sandbox.RoutePayments {
		return nil
	}
	return func(w http.ResponseWriter, r *http.Request) {
		page := f.record(&f.A, "/api/v1/payments?limit=3")
		page["has_more"] = true
		page["next_cursor"] = stuckCursorValue
		body, _ := json.Marshal(page)
		writeJSONBody(w, body)
	}
}
