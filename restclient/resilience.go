package restclient

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
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
	// BreakerFailures consecutive failures (connection errors, timeouts,
	// 5xx after retries) open the circuit (default 5; -1: no breaker).
	// While it is open calls fail at once with KindUpstream and make no
	// request; after BreakerCooldown (default 5s) one probe goes through,
	// and a success closes it again.
	BreakerFailures int
	BreakerCooldown time.Duration
	// OnBreakerChange is told of every change of state ("closed",
	// "half-open", "open"), for metrics and readiness.
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
	window := min(p.base<<n, p.cap)
	return rand.N(window) + 1
}

// retryable tells whether a failed attempt may be tried again: the request
// is an idempotent GET, so a connection that failed, or a gateway in
// front of the REST API that said 502/503/504, is worth another try.
func retryable(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.Status {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	case 0:
		return e.Kind == KindUpstream && e.Err != nil // a connection error
	}
	return false
}

// unhealthy tells whether err says the REST API itself is in trouble, as
// opposed to the caller (4xx, cancellation) or one odd answer.
func unhealthy(err error) bool {
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
}

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
	st := gobreaker.Settings{
		Name:        name,
		MaxRequests: 1,
		Timeout:     cooldown,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= failures },
		IsSuccessful: func(err error) bool {
			return err == nil || !unhealthy(err)
		},
	}
	if r.OnBreakerChange != nil {
		st.OnStateChange = func(_ string, from, to gobreaker.State) {
			r.OnBreakerChange(stateName(from), stateName(to))
		}
	}
	return &breaker{cb: gobreaker.NewCircuitBreaker[struct{}](st)}
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
	return stateName(c.breaker.cb.State())
}

// withResilience runs attempt with retries inside the circuit breaker.
func (c *Client) withResilience(ctx context.Context, ep Endpoint, attempt func() error) error {
	call := func() error {
		err := attempt()
		for n := 0; n < c.retry.max && retryable(err); n++ {
			wait := c.retry.backoff(n)
			if d, ok := ctx.Deadline(); ok && time.Until(d) < wait {
				break
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
		return call()
	}
	_, err := c.breaker.cb.Execute(func() (struct{}, error) { return struct{}{}, call() })
	if errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests) {
		return &Error{Kind: KindUpstream, Endpoint: ep, Message: "REST API unavailable (circuit open); retry shortly", Err: err}
	}
	return err
}
