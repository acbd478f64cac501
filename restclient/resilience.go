package restclient

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/sony/gobreaker/v2"
)

// Resilience configures retries and circuit breaking; its zero value does
// neither.
//
// One caller's input never opens a circuit for the others: each merchant
// (credential pair) has its own circuit, in a bounded table, and the
// process-wide circuit opens only on BreakerFailures consecutive failures that
// happened before a request reached the REST API (dial, DNS, TLS) or came from
// at least three merchants it has accepted. A failure is a call (retries
// included) that ended in a connection error, a per-call timeout or a 5xx; a
// call whose caller went away counts as nothing. An open circuit is half-open
// after the cooldown, with one probe.
type Resilience struct {
	MaxRetries      int           // retries after a connection error or a 502, 503 or 504; <= 0: none
	RetryBaseDelay  time.Duration // the first backoff (0: 50ms), doubling to 1s, full jitter, in the deadline
	BreakerFailures int           // consecutive failures open a circuit (<= 0: none), failing calls KindUpstream
	BreakerCooldown time.Duration // how long an open circuit stays open; zero: 5s
	// OnBreakerChange is told the process circuit's changes in order, unlocked
	// (it may call BreakerState).
	OnBreakerChange func(from, to CircuitState)
	// OnMerchantBreakerChange is told likewise of a merchant's, by its tag
	// (MerchantTag's), never a credential.
	OnMerchantBreakerChange func(merchant string, from, to CircuitState)
}

type retryPolicy struct {
	max       int
	base, cap time.Duration
}

func (r Resilience) retryPolicy() retryPolicy {
	return retryPolicy{max: max(r.MaxRetries, 0), base: positiveOr(r.RetryBaseDelay, 50*time.Millisecond), cap: time.Second}
}

// backoff is the delay before retry n (from 0): full jitter, doubling.
func (p retryPolicy) backoff(n int) time.Duration {
	window := p.cap
	if n < 32 && p.base < p.cap>>n { // no overflow for a large n
		window = p.base << n
	}
	return rand.N(window) + 1
}

// retryable: a failed connection (not a bad certificate), or a 502/503/504.
func retryable(err error) bool {
	e, ok := errors.AsType[*Error](err)
	if !ok {
		return false
	}
	switch e.Status {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	case 0:
		_, cut := errors.AsType[errCutShort](e.Err)
		return e.Kind == KindUpstream && e.Err != nil && !badCertificate(e.Err) && !cut
	}
	return false
}

// badCertificate tells whether err is a certificate that does not verify.
func badCertificate(err error) bool {
	return isA[*tls.CertificateVerificationError](err) || isA[x509.UnknownAuthorityError](err) ||
		isA[x509.HostnameError](err) || isA[x509.CertificateInvalidError](err)
}

// unhealthy: the REST API may be in trouble, not the caller or one odd answer.
func unhealthy(err error) bool {
	e, ok := errors.AsType[*Error](err)
	return ok && (e.Kind == KindTimeout || e.Status >= 500 ||
		(e.Status == 0 && e.Kind == KindUpstream && e.Err != nil))
}

// systemic: err came before the request reached the REST API (dial, DNS, TLS):
// no caller's input.
func systemic(err error) bool {
	if op, ok := errors.AsType[*net.OpError](err); ok && (op.Op == "dial" || op.Op == "proxyconnect") {
		return true
	}
	return isA[*net.DNSError](err) || isA[tls.RecordHeaderError](err) || isA[tls.AlertError](err) || badCertificate(err)
}

// localExhaustion: out of fds, ports or socket buffers here; no circuit counts
// it (a flood would trip all).
func localExhaustion(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) ||
		errors.Is(err, syscall.EADDRNOTAVAIL) || errors.Is(err, syscall.ENOBUFS)
}

const (
	// breakerMerchants accepted merchants must be among the failures that open
	// the process-wide circuit, unless systemic: two may be one business with
	// two pairs.
	breakerMerchants = 3
	// maxMerchants bounds the merchant circuits; past it an unused one goes
	// after merchantIdle.
	maxMerchants = 4096
	merchantIdle = 10 * time.Minute
	// Messages of calls a circuit refused.
	msgCircuitOpen         = "REST API unavailable (circuit open); retry shortly"
	msgMerchantCircuitOpen = "REST API calls for these credentials keep failing (circuit open); retry shortly"
)

// breaker is a Client's process-wide circuit (cb) and merchant circuits.
type breaker struct {
	cb               *gobreaker.CircuitBreaker[struct{}]
	run              failureRun
	merchants        merchantTable
	merchantSettings gobreaker.Settings

	// State changes, told under gobreaker's lock, reach the hooks outside it
	// (flush).
	hook         func(from, to CircuitState)
	merchantHook func(merchant string, from, to CircuitState)
	mu           sync.Mutex
	pending      []func()    // calls of a hook
	queued       atomic.Bool // pending is not empty: flush has work
	delivering   sync.Mutex
	notClosed    atomic.Bool // cb's last change: false, a call need not read the state
	quiet        quietness   // quiet, gen and fastClosed: closedfast.go
	gen          atomic.Uint64
	fastClosed   bool
}

// errSkip is what a call returns to a circuit that must not count it.
var errSkip = errors.New("restclient: not counted by the circuit breaker")

func (r Resilience) newBreaker(name string) *breaker {
	if r.BreakerFailures <= 0 {
		return nil
	}
	failures := uint32(r.BreakerFailures)
	b := &breaker{hook: r.OnBreakerChange, merchantHook: r.OnMerchantBreakerChange, fastClosed: gobreakerVerified}
	b.merchants.max = maxMerchants
	// A positive size never fails; either part may hold the whole table.
	b.merchants.trusted, _ = simplelru.NewLRU[uint64, *merchant](maxMerchants, nil)
	b.merchants.untrusted, _ = simplelru.NewLRU[uint64, *merchant](maxMerchants, nil)
	b.merchantSettings = gobreaker.Settings{
		MaxRequests:  1,
		Timeout:      positiveOr(r.BreakerCooldown, 5*time.Second),
		ReadyToTrip:  func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= failures },
		IsSuccessful: func(err error) bool { return err == nil || !unhealthy(err) },
		IsExcluded:   func(err error) bool { return err == errSkip },
	}
	process := b.merchantSettings
	process.Name = name
	process.ReadyToTrip = func(c gobreaker.Counts) bool {
		return c.ConsecutiveFailures >= failures && b.run.tripped(failures)
	}
	process.OnStateChange = func(_ string, from, to gobreaker.State) {
		b.notClosed.Store(to != gobreaker.StateClosed)
		b.gen.Add(1)
		b.run.reset() // a new circuit generation starts a new run
		if b.hook != nil {
			b.queue(func() { b.hook(CircuitState(from), CircuitState(to)) })
		}
	}
	b.cb = gobreaker.NewCircuitBreaker[struct{}](process)
	if b.merchantHook != nil {
		b.merchantSettings.OnStateChange = func(tag string, from, to gobreaker.State) {
			b.queue(func() { b.merchantHook(tag, CircuitState(from), CircuitState(to)) })
		}
	}
	return b
}

func (b *breaker) queue(change func()) {
	b.mu.Lock()
	b.pending = append(b.pending, change)
	b.queued.Store(true)
	b.mu.Unlock()
}

// state reads (and may move) the process-wide state, reporting any change.
func (b *breaker) state() gobreaker.State {
	s := b.cb.State()
	b.flush()
	return s
}

// flush hands the queued changes to the hooks, in order: one goroutine at a
// time.
func (b *breaker) flush() {
	for b.queued.Load() && b.delivering.TryLock() {
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
		for _, change := range batch {
			change()
		}
	}
}

// CircuitState is a circuit's state, valued as gobreaker's and the gauge.
type CircuitState int

// The circuit states, 0 to 2 (paygraph_circuit_breaker_state).
const (
	CircuitClosed   = CircuitState(gobreaker.StateClosed)   // calls pass
	CircuitHalfOpen = CircuitState(gobreaker.StateHalfOpen) // one probe call passes
	CircuitOpen     = CircuitState(gobreaker.StateOpen)     // calls fail at once
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

// failureRun is the process-wide circuit's failure run (a healthy answer ends
// it): how many were systemic, which accepted merchants the others came from.
type failureRun struct {
	active   atomic.Bool // the run is not empty
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

// add counts a systemic failure, or one of the merchant key.
func (r *failureRun) add(systemic bool, key uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.active.Store(true)
	switch {
	case systemic:
		r.systemic++
	case r.n < len(r.seen) && !slices.Contains(r.seen[:r.n], key):
		r.seen[r.n] = key
		r.n++
	}
}

// tripped tells whether the run is evidence against the whole REST API.
func (r *failureRun) tripped(failures uint32) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.systemic >= failures || r.n >= breakerMerchants
}

// merchant is one credential pair's circuit.
type merchant struct {
	cb        *gobreaker.CircuitBreaker[struct{}]
	trusted   atomic.Bool  // the REST API answered it 2xx: its failures count for the process
	used      atomic.Int64 // UnixNano of the last call
	notClosed atomic.Bool  // as breaker's, with quiet and gen
	quiet     quietness
	gen       atomic.Uint64
}

// merchantTable holds at most max merchant circuits, trusted apart, in LRU order.
type merchantTable struct {
	mu                 sync.Mutex
	trusted, untrusted *simplelru.LRU[uint64, *merchant]
	max                int
}

// get returns key's entry, or nil (add makes them).
func (t *merchantTable) get(key uint64, now int64) *merchant {
	t.mu.Lock()
	m, ok := t.trusted.Get(key)
	if !ok {
		m, _ = t.untrusted.Get(key)
	}
	t.mu.Unlock()
	if m != nil {
		m.used.Store(now)
	}
	return m
}

// add returns key's entry, made if needed in place of an idle accepted, a
// never-accepted or the oldest.
func (t *merchantTable) add(key uint64, now int64, settings gobreaker.Settings) *merchant {
	t.mu.Lock()
	defer t.mu.Unlock()
	if m, ok := t.trusted.Peek(key); ok {
		return m
	}
	if m, ok := t.untrusted.Peek(key); ok {
		return m
	}
	if t.trusted.Len()+t.untrusted.Len() >= t.max {
		if _, old, ok := t.trusted.GetOldest(); ok && now-old.used.Load() > int64(merchantIdle) {
			t.trusted.RemoveOldest()
		} else if _, _, ok := t.untrusted.RemoveOldest(); !ok {
			t.trusted.RemoveOldest()
		}
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
	t.untrusted.Add(key, m)
	return m
}

// trust marks m, key's entry, accepted: it moves to the trusted part.
func (t *merchantTable) trust(key uint64, m *merchant) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m.trusted.Store(true)
	if e, ok := t.untrusted.Peek(key); ok && e == m {
		t.untrusted.Remove(key)
		t.trusted.Add(key, m)
	}
}

// merchantTag is the name of key's circuit in OnMerchantBreakerChange.
func merchantTag(key uint64) string { return fmt.Sprintf("%016x", key) }

// BreakerState is the process-wide circuit's state (closed when there are none).
func (c *Client) BreakerState() CircuitState {
	if c.breaker == nil {
		return CircuitClosed
	}
	return CircuitState(c.breaker.state())
}

// withResilience runs attempt, retried, in cv's and the process's circuits.
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
			if e, ok := errors.AsType[*Error](err); ok && e.Status == 0 {
				c.dropIdle(ctx) // the REST side may have closed them (a restart)
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
	if b.notClosed.Load() || (m != nil && m.notClosed.Load()) {
		if b.state() == gobreaker.StateHalfOpen || (m != nil && m.cb.State() == gobreaker.StateHalfOpen) {
			retries = 0 // a probe is one request
		}
	} else if b.fastClosed && b.quiet.is() && (m == nil || m.quiet.is()) {
		return b.closedCall(ctx, m, key, now, func() error { return call(retries) })
	}

	var err error
	bCount := errSkip // what each circuit counts, told to its quietness (closedfast.go)
	merchantRefused := false
	bSeq := b.quiet.seq()
	_, cbErr := b.cb.Execute(func() (struct{}, error) {
		if m == nil {
			err = call(retries)
		} else {
			var mCount error
			mSeq := m.quiet.seq()
			_, mErr := m.cb.Execute(func() (struct{}, error) {
				err = call(retries)
				mCount = err
				if err != nil && (ctx.Err() != nil || localExhaustion(err)) {
					mCount = errSkip // the caller went away, or this process ran out
				}
				m.quiet.counting(mCount)
				return struct{}{}, mCount
			})
			if merchantRefused = circuitRefused(mErr); merchantRefused {
				return struct{}{}, errSkip
			}
			m.quiet.counted(mCount, mSeq)
		}
		bCount = b.account(ctx, err, m, key, now.UnixNano())
		b.quiet.counting(bCount)
		return struct{}{}, bCount
	})
	b.quiet.counted(bCount, bSeq) // errSkip, if b's Execute did not run the call, counts nothing
	b.flush()
	switch {
	case merchantRefused:
		return &Error{Kind: KindUpstream, Endpoint: ep, Message: msgMerchantCircuitOpen, Err: gobreaker.ErrOpenState}
	case circuitRefused(cbErr):
		return &Error{Kind: KindUpstream, Endpoint: ep, Message: msgCircuitOpen, Err: cbErr}
	}
	return err
}

func circuitRefused(err error) bool {
	return errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests)
}

// account records a call's outcome for the merchant and the run: what the
// process counts, err or errSkip.
func (b *breaker) account(ctx context.Context, err error, m *merchant, key uint64, now int64) error {
	if err == nil {
		b.run.reset()
		if m == nil {
			m = b.merchants.add(key, now, b.merchantSettings)
		}
		if !m.trusted.Load() {
			b.merchants.trust(key, m)
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
	sys := systemic(err)
	if !sys && !m.trusted.Load() {
		return errSkip // invented credentials, or a merchant the REST API never accepted
	}
	b.run.add(sys, key)
	return err
}
