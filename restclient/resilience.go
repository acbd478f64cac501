package restclient

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sony/gobreaker/v2"
)

// Resilience configures retries and the circuit breaker. Zero values take
// the defaults; -1 disables.
type Resilience struct {
	// MaxRetries is how many times a call is retried after a connection
	// error or a 502, 503 or 504 (default 2; -1: never). Nothing else is
	// retried: not 4xx (429 included: its Retry-After goes to the
	// caller), not 500, not a timeout (a hung REST API would only make the
	// caller wait three times as long), not a cancelled caller.
	MaxRetries int
	// RetryBaseDelay is the first backoff (default 50ms); it doubles with
	// each retry, up to 1s, with full jitter, and never runs past the
	// caller's deadline.
	RetryBaseDelay time.Duration
	// BreakerFailures consecutive failures open the circuit (default 5;
	// -1: no breaker). A failure is a call (retries included) that ended
	// in a connection error, a per-call timeout (Timeout) or a 5xx. A
	// call the REST API answered otherwise (2xx, 3xx, 4xx, 429 included,
	// and a 2xx body that does not decode: the REST API is up, the answer
	// is odd) counts as a success and resets the count. A call whose
	// caller went away (context cancelled or past its deadline) counts as
	// neither, so callers can never open the circuit. While it is open
	// calls fail at once with KindUpstream "REST API unavailable (circuit
	// open); retry shortly" and make no request; after BreakerCooldown
	// (default 5s) it is half-open: one probe call goes through (without
	// retries; others fail fast meanwhile), and its success closes the
	// circuit while its failure opens it again.
	BreakerFailures int
	BreakerCooldown time.Duration
	// OnBreakerChange is told of every change of state ("closed",
	// "half-open", "open"), in order, for metrics and readiness. It is
	// called from the goroutine of a call, outside the breaker's lock (it
	// may call BreakerState), and should return quickly. The change from
	// open to half-open is noticed lazily: by the next call or
	// BreakerState after the cooldown.
	OnBreakerChange func(from, to string)
}

type retryPolicy struct {
	max       int
	base, cap time.Duration
}

func (r Resilience) retryPolicy() retryPolicy {
	p := retryPolicy{max: r.MaxRetries, base: r.RetryBaseDelay, cap: time.Second}
	if p.max == 0 {
		p.max = 2
	}
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
		return e.Kind == KindUpstream && e.Err != nil && !badCertificate(e.Err)
	}
	return false
}

func badCertificate(err error) bool {
	var cv *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var hn x509.HostnameError
	var ci x509.CertificateInvalidError
	return errors.As(err, &cv) || errors.As(err, &ua) || errors.As(err, &hn) || errors.As(err, &ci)
}

// unhealthy tells whether err says the REST API itself is in trouble, as
// opposed to the caller (4xx, cancellation) or one odd answer.
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

// breaker wraps gobreaker for one upstream.
type breaker struct {
	cb *gobreaker.CircuitBreaker[struct{}]

	// gobreaker reports state changes under its own lock; they are queued
	// here and handed to hook outside it (see flush).
	hook       func(from, to string)
	mu         sync.Mutex
	pending    [][2]string
	queued     atomic.Bool // pending is not empty: flush has work
	delivering sync.Mutex
}

// callerGone marks the error of a call whose caller went away, for
// IsExcluded; withResilience unwraps it.
type callerGone struct{ err error }

func (c callerGone) Error() string { return c.err.Error() }

func (r Resilience) newBreaker(name string) *breaker {
	if r.BreakerFailures < 0 {
		return nil
	}
	failures := uint32(r.BreakerFailures)
	if failures == 0 {
		failures = 5
	}
	cooldown := r.BreakerCooldown
	if cooldown <= 0 {
		cooldown = 5 * time.Second
	}
	b := &breaker{hook: r.OnBreakerChange}
	st := gobreaker.Settings{
		Name:        name,
		MaxRequests: 1,
		Timeout:     cooldown,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= failures },
		IsSuccessful: func(err error) bool {
			return err == nil || !unhealthy(err)
		},
		IsExcluded: func(err error) bool {
			if err == nil { // every successful call: no errors.As (its target escapes)
				return false
			}
			var g callerGone
			return errors.As(err, &g)
		},
	}
	if b.hook != nil {
		st.OnStateChange = func(_ string, from, to gobreaker.State) {
			b.mu.Lock()
			b.pending = append(b.pending, [2]string{stateName(from), stateName(to)})
			b.queued.Store(true)
			b.mu.Unlock()
		}
	}
	b.cb = gobreaker.NewCircuitBreaker[struct{}](st)
	return b
}

// state reads the state (which may move open -> half-open) and reports
// any change.
func (b *breaker) state() gobreaker.State {
	s := b.cb.State()
	b.flush()
	return s
}

// flush hands the queued state changes to the hook, one goroutine at a
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

// deliver calls the hook for every queued change; b.delivering is held.
func (b *breaker) deliver() {
	defer b.delivering.Unlock() // even if the hook panics
	for {
		b.mu.Lock()
		batch := b.pending
		b.pending = nil
		b.queued.Store(false)
		b.mu.Unlock()
		if len(batch) == 0 {
			return
		}
		for _, t := range batch {
			b.hook(t[0], t[1])
		}
	}
}

func stateName(s gobreaker.State) string {
	switch s {
	case gobreaker.StateOpen:
		return "open"
	case gobreaker.StateHalfOpen:
		return "half-open"
	}
	return "closed"
}

// BreakerState is the circuit breaker's state: "closed", "half-open" or
// "open" ("closed" when there is no breaker).
func (c *Client) BreakerState() string {
	if c.breaker == nil {
		return "closed"
	}
	return stateName(c.breaker.state())
}

// withResilience runs attempt, with retries, inside the circuit breaker.
func (c *Client) withResilience(ctx context.Context, ep Endpoint, attempt func() error) error {
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
			err = attempt()
		}
		return err
	}
	if c.breaker == nil {
		return call(c.retry.max)
	}
	retries := c.retry.max
	if c.breaker.state() == gobreaker.StateHalfOpen {
		retries = 0 // the probe is one request
	}
	_, err := c.breaker.cb.Execute(func() (struct{}, error) {
		err := call(retries)
		if err != nil && ctx.Err() != nil {
			return struct{}{}, callerGone{err}
		}
		return struct{}{}, err
	})
	c.breaker.flush()
	if errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests) {
		return &Error{Kind: KindUpstream, Endpoint: ep, Message: "REST API unavailable (circuit open); retry shortly", Err: err}
	}
	var g callerGone
	if errors.As(err, &g) {
		return g.err
	}
	return err
}
