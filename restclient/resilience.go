package restclient

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sony/gobreaker/v2"
)

// Resilience configures retries and circuit breaking. As everywhere in
// the gateway's settings, a zero count means none: the zero Resilience
// neither retries nor breaks circuits (the gateway's settings table owns
// the defaults it runs with: REST_MAX_RETRIES, BREAKER_FAILURES, and a
// fixed cooldown). Each field says what its zero means.
//
// # Why two kinds of circuit
//
// A circuit breaker sheds calls when the REST API is in trouble. But a
// 5xx or a timeout does not always mean that: the REST API may fail on
// one id, one cursor, one merchant's data, and the gateway cannot tell
// that from an outage by looking at one answer. With one process-wide
// circuit counting every 5xx and timeout, six `payment(id:)` aliases
// whose ids make the REST API answer 500 (or hang) opened it, and every
// merchant got "circuit open" for the cooldown: one caller's input denied
// service to all the others. So failures are counted where they can be
// caused:
//
//   - Each merchant (credential pair) has its own circuit, which counts
//     every failure of its calls: a 5xx, a per-call timeout, a connection
//     error. A merchant whose calls keep failing is shed on its own, fast,
//     and the REST API is spared its retries; nobody else notices. The
//     circuits live in a bounded table keyed by the merchant identity (an
//     HMAC of the pair under the deployment's key, merchant.go) (the credentials themselves are never kept), where idle
//     entries, and then entries never accepted by the REST API, are
//     evicted first, so invented credential pairs cannot grow it.
//   - The process-wide circuit (BreakerState, OnBreakerChange, the
//     metric reading BreakerState) opens only on evidence that no single caller's input can
//     produce: BreakerFailures consecutive failures that either happened
//     before any request reached the REST API (a refused or failed dial,
//     DNS, a TLS handshake: the URL's host is ours, never the caller's),
//     or that came from at least three distinct merchants whose
//     credentials the REST API has accepted (a 2xx) before. The second
//     rule catches a REST API that is up but failing for everyone (500s,
//     503s from its load balancer, hangs) as quickly as before once a few
//     merchants are calling; an attacker would need three merchants'
//     valid credentials, and invented pairs (never answered 2xx) are not
//     counted at all. A reset or dropped connection after the request was
//     sent is counted like a 5xx: a REST worker crashing on one id looks
//     exactly like that.
//
// Both circuits are gobreaker state machines with the same threshold and
// cooldown: open, then half-open with one probe (no retries) whose
// success closes and whose failure reopens. A failure, for either, is a
// call (retries included) that ended in a connection error, a per-call
// timeout (Timeout) or a 5xx; a call the REST API answered otherwise (2xx,
// 3xx, 4xx, 429 included, and a 2xx body that does not decode: the REST
// API is up, the answer is odd) is a success; a call whose caller went
// away (context cancelled or past its deadline) counts as neither, so
// callers can never open a circuit. A merchant's calls that its own open
// circuit refused are not counted by the process-wide one.
//
// What remains: a merchant with valid credentials can still open its own
// circuit (that is the point), and whoever holds three merchants' valid
// credentials can open the process-wide one. While the process-wide
// circuit is half-open, its probe may be any merchant's call, so a
// merchant with poisoned ids can, by winning that race, keep an open
// circuit open one more cooldown; it cannot open a closed one.
type Resilience struct {
	// MaxRetries is how many times a call is retried after a connection
	// error or a 502, 503 or 504; if zero (or negative), never. Nothing
	// else is retried: not 4xx (429 included: its Retry-After goes to the
	// caller), not 500, not a timeout (a hung REST API would only make the
	// caller wait three times as long), not a cancelled caller.
	MaxRetries int
	// RetryBaseDelay is the first backoff; it doubles with each retry, up
	// to 1s, with full jitter, and never runs past the caller's deadline.
	// If zero, 50ms (a tuning constant, not a setting).
	RetryBaseDelay time.Duration
	// BreakerFailures consecutive failures open a circuit, as described
	// above; if zero (or negative), there are no circuits at all. While
	// the process-wide circuit is open calls fail at once with KindUpstream "REST API
	// unavailable (circuit open); retry shortly" and make no request;
	// while a merchant's is open, that merchant's calls fail at once with
	// KindUpstream "REST API calls for these credentials keep failing
	// (circuit open); retry shortly".
	BreakerFailures int
	// BreakerCooldown is how long an open circuit stays open before it is
	// half-open. If zero, 5s (a circuit needs some cooldown; none is not
	// a choice).
	BreakerCooldown time.Duration
	// OnBreakerChange is told of every change of state of the
	// process-wide circuit, in order, for logs (a metric reads
	// BreakerState instead). It is called from the goroutine of a call
	// (or of a BreakerState), outside the breaker's lock (it may call
	// BreakerState), and should return quickly. The change from open to
	// half-open is noticed lazily: by the next call or BreakerState after
	// the cooldown. nil: nobody is told.
	OnBreakerChange func(from, to CircuitState)
	// OnMerchantBreakerChange is told, in the same way, of every change
	// of a merchant's circuit, for logs. merchant is an opaque tag (16 hex
	// digits of the merchant identity, an HMAC of the pair under the
	// merchant key: stable across replicas with the same key, meaningless
	// without it), never a credential.
	OnMerchantBreakerChange func(merchant string, from, to CircuitState)
}

type retryPolicy struct {
	max       int
	base, cap time.Duration
}

func (r Resilience) retryPolicy() retryPolicy {
	p := retryPolicy{max: r.MaxRetries, base: r.RetryBaseDelay, cap: time.Second}
	if p.max < 0 {
		p.max = 0
	}
	if p.base <= 0 {
		p.base = 50 * time.Millisecond
	}
	return p
}

// backoff is the delay before retry n (0-based): full jitter over an
// exponentially growing window.
func (p retryPolicy) backoff(n int) time.Duration {
	window := p.cap
	if n < 32 && p.base < p.cap>>n { // no overflow for a large n
		window = p.base << n
	}
	return rand.N(window) + 1
}

// retryable tells whether a failed attempt may be tried again: the request
// is an idempotent GET, so a connection that failed, or a gateway in
// front of the REST API that said 502/503/504, is worth another try.
func retryable(err error) bool {
	if err == nil { // the usual case: no errors.As (its target escapes)
		return false
	}
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.Status {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	case 0:
		// A connection error; a certificate that does not verify will not
		// verify on the next try either.
		var cut errCutShort
		return e.Kind == KindUpstream && e.Err != nil && !badCertificate(e.Err) && !errors.As(e.Err, &cut)
	}
	return false
}

// connectionFailed tells a retryable connection error (no status) from
// a 502, 503 or 504.
func connectionFailed(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == 0
}

func badCertificate(err error) bool {
	var cv *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var hn x509.HostnameError
	var ci x509.CertificateInvalidError
	return errors.As(err, &cv) || errors.As(err, &ua) || errors.As(err, &hn) || errors.As(err, &ci)
}

// unhealthy tells whether err says the REST API itself may be in trouble,
// as opposed to the caller (4xx, cancellation) or one odd answer.
func unhealthy(err error) bool {
	if err == nil {
		return false
	}
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	switch {
	case e.Kind == KindTimeout:
		return true
	case e.Status >= 500:
		return true
	case e.Status == 0 && e.Kind == KindUpstream && e.Err != nil:
		return true
	}
	return false
}

// systemic tells whether err happened before the request reached the
// REST API: dialing (refused, unreachable, DNS, a proxy) or the TLS
// handshake. The host is the gateway's configuration, never the
// caller's, so no caller's input can cause these.
func systemic(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && (op.Op == "dial" || op.Op == "proxyconnect") {
		return true
	}
	var dns *net.DNSError
	var rh tls.RecordHeaderError
	var alert tls.AlertError
	return errors.As(err, &dns) || errors.As(err, &rh) || errors.As(err, &alert) || badCertificate(err)
}

// localExhaustion tells whether err is this process running out of its
// own resources before a request left it: no file descriptor (EMFILE,
// ENFILE), no local port (EADDRNOTAVAIL) or socket buffer (ENOBUFS).
// That says nothing of the REST API's health, and counted it would let a
// flood of connections to the gateway open the circuit for every merchant:
// no circuit counts it. (A full slot pool never reaches a circuit: the
// slot is taken before the call, Client.do.)
func localExhaustion(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) ||
		errors.Is(err, syscall.EADDRNOTAVAIL) || errors.Is(err, syscall.ENOBUFS)
}

// Sizes of the merchant circuits.
const (
	// breakerMerchants is how many distinct merchants (known to the REST
	// API) must be among the failures that open the process-wide
	// circuit, unless the failures are systemic. Three: one merchant is
	// an attacker's reach, two may be one business with two key pairs.
	breakerMerchants = 3
	// maxMerchants bounds the table of merchant circuits (each about
	// 0.3 KB measured, 1.3 MB when full); merchantIdle is how long an
	// unused entry is kept when the table needs room.
	maxMerchants = 4096
	merchantIdle = 10 * time.Minute
	// evictionSample is how many entries a full table looks at to choose
	// the one to evict (sampled LRU, as Redis does): an insert costs
	// O(evictionSample), never a scan of the table.
	evictionSample = 32
)

// breaker is the circuit breaking of one Client: the process-wide circuit
// (cb) and one circuit per merchant (merchants). See Resilience.
type breaker struct {
	cb        *gobreaker.CircuitBreaker[struct{}]
	run       failureRun
	merchants merchantTable
	// merchantSettings makes a merchant's circuit; Name is its tag.
	merchantSettings gobreaker.Settings

	// gobreaker reports state changes under its own lock (OnStateChange
	// runs inside it); they are queued here and handed to the hooks
	// outside it (see flush). The queue is only for the hooks, which log:
	// a log write made under the process-wide circuit's lock would stall
	// every REST call of the process while the log sink blocks, and a
	// hook that read BreakerState there would deadlock. The metric needs
	// no hook: it reads BreakerState when scraped.
	hook         func(from, to CircuitState)
	merchantHook func(merchant string, from, to CircuitState)
	mu           sync.Mutex
	pending      []stateChange
	queued       atomic.Bool // pending is not empty: flush has work
	delivering   sync.Mutex
	// notClosed mirrors cb's state as its last change left it (set in
	// OnStateChange, under gobreaker's lock): false, it is closed, so a
	// call needs no look at the state (withResilience); true, it is open
	// or half-open, and open may have become half-open since, which only
	// cb.State tells.
	notClosed atomic.Bool
	// quiet tells a closed circuit with no failure counted since its
	// last success (closedfast.go); gen counts its changes of state.
	quiet quietness
	gen   atomic.Uint64
	// fastClosed: calls on closed, quiet circuits skip gobreaker
	// (closedfast.go); false where gobreaker is not the verified version.
	fastClosed bool
}

// stateChange is one queued change; merchant is "" for the process-wide
// circuit.
type stateChange struct {
	merchant string
	from, to CircuitState
}

// errSkip is what a call returns to a circuit that must not count it: a
// caller that went away, a merchant's call its own circuit refused, or
// (for the process-wide circuit) a failure that proves nothing about the
// REST API as a whole. The call's own error travels beside it.
var errSkip = errors.New("restclient: not counted by the circuit breaker")

func (r Resilience) newBreaker(name string) *breaker {
	if r.BreakerFailures <= 0 {
		return nil
	}
	failures := uint32(r.BreakerFailures)
	cooldown := r.BreakerCooldown
	if cooldown <= 0 {
		cooldown = 5 * time.Second
	}
	b := &breaker{hook: r.OnBreakerChange, merchantHook: r.OnMerchantBreakerChange, fastClosed: gobreakerVerified}
	b.merchants.max = maxMerchants
	healthy := func(err error) bool { return err == nil || !unhealthy(err) }
	skipped := func(err error) bool { return err == errSkip }
	b.cb = gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{
		Name:        name,
		MaxRequests: 1,
		Timeout:     cooldown,
		ReadyToTrip: func(c gobreaker.Counts) bool {
			return c.ConsecutiveFailures >= failures && b.run.tripped(failures)
		},
		IsSuccessful: healthy,
		IsExcluded:   skipped,
		OnStateChange: func(_ string, from, to gobreaker.State) {
			b.notClosed.Store(to != gobreaker.StateClosed)
			b.gen.Add(1)
			b.run.reset() // a new circuit generation starts a new run
			if b.hook != nil {
				b.queue(stateChange{"", circuitState(from), circuitState(to)})
			}
		},
	})
	b.merchantSettings = gobreaker.Settings{
		MaxRequests:  1,
		Timeout:      cooldown,
		ReadyToTrip:  func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= failures },
		IsSuccessful: healthy,
		IsExcluded:   skipped,
	}
	if b.merchantHook != nil {
		b.merchantSettings.OnStateChange = func(tag string, from, to gobreaker.State) {
			b.queue(stateChange{tag, circuitState(from), circuitState(to)})
		}
	}
	return b
}

func (b *breaker) queue(c stateChange) {
	b.mu.Lock()
	b.pending = append(b.pending, c)
	b.queued.Store(true)
	b.mu.Unlock()
}

// state reads the process-wide state (which may move open -> half-open)
// and reports any change.
func (b *breaker) state() gobreaker.State {
	s := b.cb.State()
	b.flush()
	return s
}

// flush hands the queued state changes to the hooks, one goroutine at a
// time so that they arrive in order. A goroutine that finds another one
// delivering leaves its changes to it (which also keeps a hook that calls
// BreakerState from deadlocking).
func (b *breaker) flush() {
	// Every REST call ends here: without a queued change (nearly always)
	// it costs one atomic load, no lock.
	for b.queued.Load() && b.delivering.TryLock() {
		// A change queued after deliver's last look but before it
		// unlocked was left to this goroutine by one whose TryLock
		// failed: the loop looks again.
		b.deliver()
	}
}

// deliver calls the hooks for every queued change; b.delivering is held.
func (b *breaker) deliver() {
	defer b.delivering.Unlock() // even if a hook panics
	for {
		b.mu.Lock()
		batch := b.pending
		b.pending = nil
		b.queued.Store(false)
		b.mu.Unlock()
		if len(batch) == 0 {
			return
		}
		for _, c := range batch {
			if c.merchant == "" {
				b.hook(c.from, c.to)
			} else {
				b.merchantHook(c.merchant, c.from, c.to)
			}
		}
	}
}

// CircuitState is the state of a circuit. Its numeric values are those
// of the paygraph_circuit_breaker_state gauge, which reads BreakerState.
type CircuitState int

// The circuit states.
const (
	CircuitClosed   CircuitState = 0 // calls pass
	CircuitHalfOpen CircuitState = 1 // one probe call passes
	CircuitOpen     CircuitState = 2 // calls fail at once
)

// String is the state's name in logs: "closed", "half-open" or "open".
func (s CircuitState) String() string {
	switch s {
	case CircuitOpen:
		return "open"
	case CircuitHalfOpen:
		return "half-open"
	}
	return "closed"
}

func circuitState(s gobreaker.State) CircuitState {
	switch s {
	case gobreaker.StateOpen:
		return CircuitOpen
	case gobreaker.StateHalfOpen:
		return CircuitHalfOpen
	}
	return CircuitClosed
}

// failureRun is what the process-wide circuit knows of its current run of
// consecutive failures besides their number: how many were systemic, and
// which merchants known to the REST API the others came from (up to
// breakerMerchants of them). Any healthy answer ends the run.
type failureRun struct {
	// active: the run is not empty. Every successful call ends the run:
	// without one (nearly always) that costs an atomic load, no lock.
	active   atomic.Bool
	mu       sync.Mutex
	systemic uint32
	n        int
	seen     [breakerMerchants]uint64
}

func (r *failureRun) reset() {
	if !r.active.Load() {
		return
	}
	r.mu.Lock()
	r.systemic, r.n = 0, 0
	r.active.Store(false)
	r.mu.Unlock()
}

func (r *failureRun) addSystemic() {
	r.mu.Lock()
	r.systemic++
	r.active.Store(true)
	r.mu.Unlock()
}

func (r *failureRun) addMerchant(key uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.active.Store(true)
	for _, k := range r.seen[:r.n] {
		if k == key {
			return
		}
	}
	if r.n < len(r.seen) {
		r.seen[r.n] = key
		r.n++
	}
}

// tripped tells whether the run is evidence against the REST API as a
// whole (the count itself is gobreaker's).
func (r *failureRun) tripped(failures uint32) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.systemic >= failures || r.n >= breakerMerchants
}

// merchant is one credential pair's circuit.
type merchant struct {
	cb *gobreaker.CircuitBreaker[struct{}]
	// trusted: the REST API has answered this pair with a 2xx, so its
	// failures may count towards the process-wide circuit.
	trusted atomic.Bool
	used    atomic.Int64 // UnixNano of the last call
	// notClosed mirrors cb's state as breaker.notClosed does the
	// process-wide circuit's; quiet and gen as the breaker's.
	notClosed atomic.Bool
	quiet     quietness
	gen       atomic.Uint64
}

// merchantTable holds the merchant circuits, at most max of them.
type merchantTable struct {
	mu  sync.Mutex
	m   map[uint64]*merchant
	max int
}

// get returns key's entry, or nil: entries are made only by add, so a
// call that needs none (a 4xx, say) costs a lookup and no memory.
func (t *merchantTable) get(key uint64, now int64) *merchant {
	t.mu.Lock()
	m := t.m[key]
	t.mu.Unlock()
	if m != nil {
		m.used.Store(now)
	}
	return m
}

// add returns key's entry, making it (and making room) if needed.
func (t *merchantTable) add(key uint64, now int64, settings gobreaker.Settings) *merchant {
	t.mu.Lock()
	defer t.mu.Unlock()
	if m := t.m[key]; m != nil {
		return m
	}
	if t.m == nil {
		t.m = make(map[uint64]*merchant)
	}
	if len(t.m) >= t.max {
		t.evict(now)
	}
	settings.Name = merchantTag(key)
	m := &merchant{}
	hook := settings.OnStateChange
	settings.OnStateChange = func(tag string, from, to gobreaker.State) {
		m.notClosed.Store(to != gobreaker.StateClosed)
		m.gen.Add(1)
		if hook != nil {
			hook(tag, from, to)
		}
	}
	m.cb = gobreaker.NewCircuitBreaker[struct{}](settings)
	m.used.Store(now)
	t.m[key] = m
	return m
}

// evict makes room for one entry: among a sample of entries (Go's map
// iteration starts at a random place), every idle one goes; if none is
// idle, the least recently used one goes, preferring one the REST API has
// never accepted (invented credentials) over a real merchant's.
func (t *merchantTable) evict(now int64) {
	var victim uint64
	var victimUsed int64
	victimTrusted, found, freed := true, false, false
	seen := 0
	for k, m := range t.m {
		if seen++; seen > evictionSample {
			break
		}
		used, trusted := m.used.Load(), m.trusted.Load()
		if now-used > int64(merchantIdle) {
			delete(t.m, k)
			freed = true
			continue
		}
		if !found || (victimTrusted && !trusted) || (victimTrusted == trusted && used < victimUsed) {
			victim, victimUsed, victimTrusted, found = k, used, trusted, true
		}
	}
	if !freed && found {
		delete(t.m, victim)
	}
}

func (t *merchantTable) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}

// merchantTag is the name of key's circuit in OnMerchantBreakerChange.
func merchantTag(key uint64) string {
	s := strconv.FormatUint(key, 16)
	for len(s) < 16 {
		s = "0" + s
	}
	return s
}

// BreakerState is the process-wide circuit's state (CircuitClosed when
// there are no circuits). Merchants' own circuits are not reflected: one
// merchant's trouble is not the REST API's. Reading it also notices the
// lazy change from open to half-open and delivers queued changes to the
// hooks.
func (c *Client) BreakerState() CircuitState {
	if c.breaker == nil {
		return CircuitClosed
	}
	return circuitState(c.breaker.state())
}

// Messages of calls a circuit refused.
const (
	msgCircuitOpen         = "REST API unavailable (circuit open); retry shortly"
	msgMerchantCircuitOpen = "REST API calls for these credentials keep failing (circuit open); retry shortly"
)

// withResilience runs attempt, with retries, inside the caller's merchant
// circuit (cv's, the call's credentials) and the process-wide one; now is
// the call's start.
func (c *Client) withResilience(ctx context.Context, cv *credentialsValue, ep Endpoint, now time.Time, attempt func() error) error {
	call := func(retries int) error {
		err := attempt()
		for n := 0; n < retries && retryable(err); n++ {
			wait := c.retry.backoff(n)
			if d, ok := ctx.Deadline(); ok && time.Until(d) < wait {
				break // the caller would be gone before the next try
			}
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return err
			case <-t.C:
			}
			if connectionFailed(err) {
				// Its connection, and those pooled with it, may be ones the
				// REST side closed (it restarted): the retry dials.
				c.dropIdle(ctx)
			}
			err = attempt()
		}
		return err
	}
	b := c.breaker
	if b == nil {
		return call(c.retry.max)
	}
	key := cv.merchant.short()
	m := b.merchants.get(key, now.UnixNano())
	retries := c.retry.max
	// Closed circuits as their last changes left them (nearly always)
	// need no look at their states: two locks and two clock readings a
	// call fewer.
	if b.notClosed.Load() || (m != nil && m.notClosed.Load()) {
		if b.state() == gobreaker.StateHalfOpen || (m != nil && m.cb.State() == gobreaker.StateHalfOpen) {
			retries = 0 // a probe is one request
		}
	} else if b.fastClosed && b.quiet.is() && (m == nil || m.quiet.is()) {
		return b.closedCall(ctx, m, key, now, func() error { return call(retries) })
	}

	var err error            // the call's own error
	var merchantRefused bool // the merchant's open circuit refused the call
	// What each circuit was given to count (errSkip: nothing), for their
	// quietness (closedfast.go); ran: it was.
	var mCount, bCount error
	var mRan, bRan bool
	var mSeq uint64
	if m != nil {
		mSeq = m.quiet.seq()
	}
	bSeq := b.quiet.seq()
	_, cbErr := b.cb.Execute(func() (struct{}, error) {
		if m == nil {
			err = call(retries)
		} else {
			_, mErr := m.cb.Execute(func() (struct{}, error) {
				err = call(retries)
				mCount, mRan = err, true
				if err != nil && (ctx.Err() != nil || localExhaustion(err)) {
					mCount = errSkip // the caller went away, or this process ran out
				}
				m.quiet.counting(mCount)
				return struct{}{}, mCount
			})
			if errors.Is(mErr, gobreaker.ErrOpenState) || errors.Is(mErr, gobreaker.ErrTooManyRequests) {
				merchantRefused = true
				return struct{}{}, errSkip
			}
		}
		bCount, bRan = b.account(ctx, err, m, key, now.UnixNano()), true
		b.quiet.counting(bCount)
		return struct{}{}, bCount
	})
	if mRan {
		m.quiet.counted(mCount, mSeq)
	}
	if bRan {
		b.quiet.counted(bCount, bSeq)
	}
	b.flush()
	switch {
	case merchantRefused:
		return &Error{Kind: KindUpstream, Endpoint: ep, Message: msgMerchantCircuitOpen, Err: gobreaker.ErrOpenState}
	case errors.Is(cbErr, gobreaker.ErrOpenState) || errors.Is(cbErr, gobreaker.ErrTooManyRequests):
		return &Error{Kind: KindUpstream, Endpoint: ep, Message: msgCircuitOpen, Err: cbErr}
	}
	return err
}

// account records a call's outcome for the merchant (its first failure,
// or the REST API's acceptance of its credentials) and the process-wide
// run, and returns what the process-wide circuit is to count: err, or
// errSkip.
func (b *breaker) account(ctx context.Context, err error, m *merchant, key uint64, now int64) error {
	if err == nil {
		b.run.reset()
		if m == nil {
			m = b.merchants.add(key, now, b.merchantSettings)
		}
		if !m.trusted.Load() {
			m.trusted.Store(true)
		}
		return nil
	}
	if ctx.Err() != nil || localExhaustion(err) {
		return errSkip // the caller went away, or this process ran out: no evidence either way
	}
	if !unhealthy(err) {
		b.run.reset() // the REST API answered: it is up
		return err
	}
	if m == nil { // the merchant's first failure: its circuit starts here
		m = b.merchants.add(key, now, b.merchantSettings)
		m.quiet.replay(m.cb, err)
	}
	switch {
	case systemic(err):
		b.run.addSystemic()
	case m.trusted.Load():
		b.run.addMerchant(key)
	default:
		return errSkip // invented credentials, or a merchant the REST API never accepted
	}
	return err
}
