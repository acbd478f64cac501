package sandbox

import (
	"cmp"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options configures a Server.
type Options struct {
	Seed        int64         // 0 -> DefaultSeed; same seed -> byte-identical data
	StatusParam string        // name of the list status filter query param; "" -> "status"
	PayURL      string        // {pay_url} for payment link urls; "" -> "https://pay.example.com"
	Latency     time.Duration // added to every request (respecting the request context)
}

// Route patterns reported in Call.Route.
const (
	RoutePayments        = "/api/v1/payments"
	RoutePayment         = "/api/v1/payments/{id}"
	RoutePaymentLink     = "/api/v1/payment-links/{id}"
	RouteCheckoutSession = "/api/v1/checkout/sessions/{id}"
)

// List limits.
const (
	DefaultLimit = 20
	MaxLimit     = 100
)

const badJSONBody = "<html><body><h1>Service temporarily unavailable</h1></body></html>\n"

// Call is one recorded request.
type Call struct {
	Method      string
	Route       string // a Route* constant, or "" for unknown paths
	EscapedPath string
	RawQuery    string
	APIKey      string // x-api-key header as sent
	APISecret   string // x-api-secret header as sent
	// Status is the HTTP status written; 0 while in flight and when nothing
	// was written (hang, drop, cancelled latency).
	Status int
	Fault  Fault // the fault injected (FaultNone in the Call a fault hook gets)
}

// Fault is a failure injected into a request by the fault hook.
type Fault int

const (
	FaultNone    Fault = iota
	Fault500           // 500 {"error":"Internal server error"}
	Fault502           // 502 {"error":"Bad gateway"}
	Fault503           // 503 {"error":"Service unavailable"}
	Fault429           // 429 {"error":"Too many requests"} with Retry-After: 7
	FaultHang          // block until the request context ends; write nothing
	FaultDrop          // hijack and close the connection without answering
	FaultBadJSON       // 200, Content-Type application/json, body that is not JSON
)

var faultNames = [...]string{"none", "500", "502", "503", "429", "hang", "drop", "badjson"}

func (f Fault) String() string {
	if f >= 0 && int(f) < len(faultNames) {
		return faultNames[f]
	}
	return "Fault(" + strconv.Itoa(int(f)) + ")"
}

// Server is the sandbox REST API. It is safe for concurrent use.
type Server struct {
	statusParam string
	businesses  []*business
	byKey       map[string]*business

	latency atomic.Int64
	faults  atomic.Pointer[func(Call) Fault]

	// data guards what the admin endpoint changes (payments, sessions, their
	// bodies, statusPos); handlers never hold it while writing to the network.
	data sync.RWMutex

	mu    sync.Mutex
	calls []Call
	epoch uint64 // bumped by ResetCalls so in-flight requests don't touch new entries
}

type business struct {
	info     Business
	payments []Payment
	links    []PaymentLink
	sessions []CheckoutSession

	listJSON   [][]byte // list form, in list order
	detailJSON [][]byte // retrieve form, in list order
	paymentPos map[string]int
	statusPos  map[string][]int // status ("" for all) -> ascending list positions

	linkJSON    map[string][]byte // by id
	sessionJSON map[string][]byte // by id and by reference

	pendingID string // Fixture.PendingPaymentID, chosen once so a status change keeps it
}

// New builds a Server with data generated from opts.Seed.
func New(opts Options) *Server {
	payURL := cmp.Or(strings.TrimSuffix(opts.PayURL, "/"), "https://pay.example.com")
	s := &Server{statusParam: cmp.Or(opts.StatusParam, "status"), byKey: map[string]*business{}}
	s.latency.Store(int64(opts.Latency))
	for _, b := range generate(cmp.Or(opts.Seed, DefaultSeed), payURL) {
		b.paymentPos = make(map[string]int, len(b.payments))
		b.statusPos = map[string][]int{}
		b.linkJSON = make(map[string][]byte, len(b.links))
		b.sessionJSON = make(map[string][]byte, 2*len(b.sessions))
		b.listJSON, b.detailJSON = make([][]byte, len(b.payments)), make([][]byte, len(b.payments))
		for _, st := range append(Statuses(), "") {
			b.statusPos[st] = []int{}
		}
		for i, p := range b.payments {
			b.statusPos[""] = append(b.statusPos[""], i)
			b.putPayment(i)
			b.paymentPos[p.ID] = i
			b.statusPos[p.Status] = append(b.statusPos[p.Status], i)
			if p.Status == "PENDING" && b.pendingID == "" {
				b.pendingID = p.ID
			}
		}
		for _, l := range b.links {
			b.linkJSON[l.ID] = marshal(l)
		}
		for _, cs := range b.sessions {
			b.putSession(cs)
		}
		s.businesses = append(s.businesses, b)
		s.byKey[b.info.APIKey] = b
	}
	return s
}

// Businesses returns the sandbox's businesses with their credentials.
func (s *Server) Businesses() []Business {
	out := make([]Business, len(s.businesses))
	for i, b := range s.businesses {
		out[i] = b.info
	}
	return out
}

// Payments, PaymentLinks and CheckoutSessions return a copy of the
// business's records, payments in REST list order (nil for an unknown key).
func (s *Server) Payments(apiKey string) []Payment {
	return snapshot(s, apiKey, func(b *business) []Payment { return slices.Clone(b.payments) })
}

func (s *Server) PaymentLinks(apiKey string) []PaymentLink {
	return snapshot(s, apiKey, func(b *business) []PaymentLink { return cloneAll(b.links, PaymentLink.clone) })
}

func (s *Server) CheckoutSessions(apiKey string) []CheckoutSession {
	return snapshot(s, apiKey, func(b *business) []CheckoutSession { return cloneAll(b.sessions, CheckoutSession.clone) })
}

// snapshot is get of the business of apiKey under s.data, or nil.
func snapshot[T any](s *Server, apiKey string, get func(*business) []T) []T {
	b := s.byKey[apiKey]
	if b == nil {
		return nil
	}
	s.data.RLock()
	defer s.data.RUnlock()
	return get(b)
}

// StatusParam returns the name of the list status filter query parameter.
func (s *Server) StatusParam() string { return s.statusParam }

// EncodeCursor is the cursor the list endpoint gives after the payment paymentID.
func EncodeCursor(paymentID string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(paymentID))
}

// ---- call accounting, latency, faults ----

// Calls returns a copy of the call log, in arrival order.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// CallCount counts the recorded calls of a route (a Route* constant); "" counts all.
func (s *Server) CallCount(route string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.calls {
		if route == "" || c.Route == route {
			n++
		}
	}
	return n
}

// ResetCalls clears the call log.
func (s *Server) ResetCalls() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = nil
	s.epoch++
}

// SetLatency sets the delay added to every request.
func (s *Server) SetLatency(d time.Duration) { s.latency.Store(int64(d)) }

// SetFaults installs a hook deciding, per request, which fault to inject.
// The hook may be called concurrently. nil removes it.
func (s *Server) SetFaults(f func(c Call) Fault) {
	if f == nil {
		s.faults.Store(nil)
	} else {
		s.faults.Store(&f)
	}
}

// RandomFaults returns a concurrency-safe fault hook that injects a fault
// into about rate (0..1) of the requests, uniformly among kinds (default:
// Fault500, Fault502, Fault503, Fault429), in a sequence fixed by seed.
func RandomFaults(seed int64, rate float64, kinds ...Fault) func(Call) Fault {
	if len(kinds) == 0 {
		kinds = []Fault{Fault500, Fault502, Fault503, Fault429}
	}
	kinds = slices.Clone(kinds)
	var mu sync.Mutex
	rng := newRand(seed)
	return func(Call) Fault {
		mu.Lock()
		defer mu.Unlock()
		if rng.Float64() >= rate {
			return FaultNone
		}
		return kinds[rng.IntN(len(kinds))]
	}
}

func (s *Server) record(c Call) (int, uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, c)
	return len(s.calls) - 1, s.epoch
}

func (s *Server) finish(idx int, epoch uint64, status int, fault Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if epoch == s.epoch && idx < len(s.calls) {
		s.calls[idx].Status = status
		s.calls[idx].Fault = fault
	}
}

// ---- HTTP ----

// ServeHTTP implements the REST API. Where rest-api.md is silent:
//
//   - Every route is GET only (405, Allow: GET); an unknown route is 404
//     before any auth.
//   - Missing x-api-key or x-api-secret: 401 "Missing API credentials"; a
//     pair of no business: 401 "Invalid API credentials".
//   - The list: limit 20 by default, clamped to 100, 400 "Invalid limit"
//     below 1 or not an integer; 400 "Invalid cursor" and "Invalid status"
//     (matched exactly); empty values count as absent. It is ordered by
//     created_at, then id, descending; the cursor is base64url (no padding)
//     of the last item's id, so it fits any limit and status filter.
//   - Path ids are unescaped segment by segment; an id holding "/" or "?"
//     is unknown. A checkout session is found by id or reference.
//
// Order: record the Call, ask the fault hook, sleep the latency (no answer
// if the request ends), then the fault (on any route) or route -> method ->
// credentials -> parameters -> lookup.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	escaped := r.URL.EscapedPath()
	if strings.HasPrefix(escaped, AdminPrefix) {
		s.serveAdmin(w, r)
		return
	}
	route, id, idOK := matchRoute(escaped, RoutePayments, RoutePayment, RoutePaymentLink, RouteCheckoutSession)
	c := Call{
		Method: r.Method, Route: route, EscapedPath: escaped, RawQuery: r.URL.RawQuery,
		APIKey: r.Header.Get("x-api-key"), APISecret: r.Header.Get("x-api-secret"),
	}
	idx, epoch := s.record(c)

	fault := FaultNone
	if h := s.faults.Load(); h != nil {
		fault = (*h)(c)
	}
	status := 0
	defer func() { s.finish(idx, epoch, status, fault) }()

	if d := time.Duration(s.latency.Load()); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	if fault != FaultNone {
		status = s.applyFault(w, r, fault)
	} else {
		status = s.handle(w, r, route, id, idOK)
	}
}

func (s *Server) applyFault(w http.ResponseWriter, r *http.Request, f Fault) int {
	switch f {
	case Fault502:
		return writeJSON(w, http.StatusBadGateway, errorBody("Bad gateway"))
	case Fault503:
		return writeJSON(w, http.StatusServiceUnavailable, errorBody("Service unavailable"))
	case Fault429:
		w.Header().Set("Retry-After", "7")
		return writeJSON(w, http.StatusTooManyRequests, errorBody("Too many requests"))
	case FaultHang:
		<-r.Context().Done()
		return 0
	case FaultDrop:
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(http.ErrAbortHandler) // e.g. HTTP/2: abort the stream instead
		}
		conn.Close()
		return 0
	case FaultBadJSON:
		return writeJSON(w, http.StatusOK, []byte(badJSONBody))
	}
	return writeJSON(w, http.StatusInternalServerError, bodyInternal) // Fault500 and unknown faults
}

// matchRoute returns the first of routes the escaped path matches ({id}:
// any non-empty segment) and its unescaped id; idOK is false when it cannot be unescaped.
func matchRoute(escaped string, routes ...string) (route, id string, idOK bool) {
	for _, route := range routes {
		if raw, ok := matchPattern(escaped, route); ok {
			id, err := url.PathUnescape(raw)
			return route, id, err == nil
		}
	}
	return "", "", false
}

// matchPattern reports whether path has pattern's segments, and returns the one at {id}.
func matchPattern(path, pattern string) (raw string, ok bool) {
	for {
		p, prest, pmore := strings.Cut(pattern, "/")
		seg, rest, more := strings.Cut(path, "/")
		if p == "{id}" && seg != "" {
			raw = seg
		} else if p != seg {
			return "", false
		}
		if !pmore || !more {
			return raw, pmore == more
		}
		pattern, path = prest, rest
	}
}

// The error bodies, {"error": "..."}.
var (
	bodyNotFound         = errorBody("Not found")
	bodyMethodNotAllowed = errorBody("Method not allowed")
	bodyMissingCreds     = errorBody("Missing API credentials")
	bodyInvalidCreds     = errorBody("Invalid API credentials")
	bodyInvalidLimit     = errorBody("Invalid limit")
	bodyInvalidCursor    = errorBody("Invalid cursor")
	bodyInvalidStatus    = errorBody("Invalid status")
	bodyPaymentNotFound  = errorBody("Payment not found")
	bodyLinkNotFound     = errorBody("Payment link not found")
	bodySessionNotFound  = errorBody("Checkout session not found")
	bodyInternal         = errorBody("Internal server error")
	bodyInvalidBody      = errorBody("Invalid body") // admin: not one JSON object of maxAdminBodyBytes at most
)

func (s *Server) handle(w http.ResponseWriter, r *http.Request, route, id string, idOK bool) int {
	if route == "" {
		return writeJSON(w, http.StatusNotFound, bodyNotFound)
	}
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		return writeJSON(w, http.StatusMethodNotAllowed, bodyMethodNotAllowed)
	}
	b, status := s.authenticate(w, r)
	if b == nil {
		return status
	}
	if route == RoutePayments {
		return s.list(w, r, b)
	}
	var body, notFound []byte // bodies are replaced, never changed in place
	s.data.RLock()
	switch route {
	case RoutePayment:
		if i, ok := b.paymentPos[id]; ok {
			body = b.detailJSON[i]
		}
		notFound = bodyPaymentNotFound
	case RoutePaymentLink:
		body, notFound = b.linkJSON[id], bodyLinkNotFound
	case RouteCheckoutSession:
		body, notFound = b.sessionJSON[id], bodySessionNotFound
	}
	s.data.RUnlock()
	if body == nil || !idOK {
		return writeJSON(w, http.StatusNotFound, notFound)
	}
	return writeJSON(w, http.StatusOK, body)
}

// authenticate is the business of r's credentials, or nil and the status of the 401 it wrote.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) (*business, int) {
	key, secret := r.Header.Get("x-api-key"), r.Header.Get("x-api-secret")
	if key == "" || secret == "" {
		return nil, writeJSON(w, http.StatusUnauthorized, bodyMissingCreds)
	}
	b := s.byKey[key]
	if b == nil || subtle.ConstantTimeCompare([]byte(secret), []byte(b.info.APISecret)) != 1 {
		return nil, writeJSON(w, http.StatusUnauthorized, bodyInvalidCreds)
	}
	return b, 0
}

func (s *Server) list(w http.ResponseWriter, r *http.Request, b *business) int {
	q := r.URL.Query()
	limit, ok := parseLimit(q.Get("limit"))
	if !ok {
		return writeJSON(w, http.StatusBadRequest, bodyInvalidLimit)
	}
	start := 0
	if c := q.Get("cursor"); c != "" {
		raw, err := base64.RawURLEncoding.DecodeString(c)
		pos, found := b.paymentPos[string(raw)]
		if err != nil || !found {
			return writeJSON(w, http.StatusBadRequest, bodyInvalidCursor)
		}
		start = pos + 1
	}
	out, ok := s.listPage(b, start, limit, q.Get(s.statusParam))
	if !ok {
		return writeJSON(w, http.StatusBadRequest, bodyInvalidStatus)
	}
	return writeJSON(w, http.StatusOK, out)
}

// listPage renders one page of the list under s.data; ok is false for an unknown status.
func (s *Server) listPage(b *business, start, limit int, st string) (out []byte, ok bool) {
	s.data.RLock()
	defer s.data.RUnlock()
	positions, ok := b.statusPos[st]
	if !ok {
		return nil, false
	}
	k, _ := slices.BinarySearch(positions, start)
	end := min(k+limit, len(positions))
	page, hasMore := positions[k:end], end < len(positions)

	size := 64
	for _, i := range page {
		size += len(b.listJSON[i]) + 1
	}
	out = make([]byte, 0, size)
	out = append(out, `{"data":[`...)
	for n, i := range page {
		if n > 0 {
			out = append(out, ',')
		}
		out = append(out, b.listJSON[i]...)
	}
	out = append(out, `],"has_more":`...)
	out = strconv.AppendBool(out, hasMore)
	out = append(out, `,"next_cursor":`...)
	if hasMore {
		out = strconv.AppendQuote(out, EncodeCursor(b.payments[page[len(page)-1]].ID)) // base64url: nothing to escape
	} else {
		out = append(out, "null"...)
	}
	return append(out, '}'), true
}

// parseLimit: "" -> DefaultLimit, > MaxLimit -> MaxLimit, non-integer or < 1 -> invalid.
func parseLimit(v string) (int, bool) {
	if v == "" {
		return DefaultLimit, true
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) && !strings.HasPrefix(v, "-") {
			return MaxLimit, true // a huge integer is still > 100
		}
		return 0, false
	}
	if n < 1 {
		return 0, false
	}
	return int(min(n, MaxLimit)), true
}

func writeJSON(w http.ResponseWriter, status int, body []byte) int {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
	return status
}
