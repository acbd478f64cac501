package restclient

// The closed-circuit fast path (closedfast.go) against gobreaker itself:
// the same calls through a client with it and one without answer the
// same, change the same circuits in the same order and leave the same
// consecutive failures.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// outcomeRT answers a GET of /api/v1/payments/{id} by the id's prefix:
// ok (200, the payment), e500, e503, e404, dial (a refused dial:
// systemic), reset (a connection reset after the request went out), cancel
// (the caller's context is cancelled during the call).
type outcomeRT struct{}

type cancelKey struct{}

func (outcomeRT) RoundTrip(r *http.Request) (*http.Response, error) {
	id := r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
	status := 200
	switch kind, _, _ := strings.Cut(id, "-"); kind {
	case "e500":
		status = 500
	case "e503":
		status = 503
	case "e404":
		status = 404
	case "dial":
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	case "reset":
		return nil, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	case "cancel":
		r.Context().Value(cancelKey{}).(context.CancelFunc)()
		return nil, r.Context().Err()
	}
	body := `{"error":"boom"}`
	if status == 200 {
		body = strings.Replace(paymentBody, "pay_prod_0123456789abcdef0123456789abcdef", id, 1)
	}
	return &http.Response{StatusCode: status, Header: http.Header{}, Body: io.NopCloser(bytes.NewReader([]byte(body))),
		ContentLength: int64(len(body)), Request: r}, nil
}

// TestClosedFastPathSameAsGobreaker drives seeded random outcomes of four
// merchants, one call at a time, through a client with the fast path and
// one without, and compares after every call.
func TestClosedFastPathSameAsGobreaker(t *testing.T) {
	t.Parallel()
	if !gobreakerVerified {
		t.Skipf("gobreaker is %q, not %s: the fast path is off (TestGobreakerFence)", gobreakerVersion(), verifiedGobreaker)
	}
	const cooldown = 150 * time.Millisecond
	outcomes := []struct {
		kind   string
		weight int
	}{{"ok", 55}, {"e500", 14}, {"e503", 4}, {"e404", 10}, {"dial", 5}, {"reset", 7}, {"cancel", 5}}
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			t.Parallel()
			// The cooldowns pass on the bubble's fake clock.
			synctest.Test(t, func(t *testing.T) {
				type side struct {
					c       *Client
					mu      sync.Mutex
					changes []string
				}
				mk := func(fast bool) *side {
					s := &side{}
					note := func(what string) { s.mu.Lock(); s.changes = append(s.changes, what); s.mu.Unlock() }
					s.c = newClient(t, Config{BaseURL: "http://rest.invalid", HTTPClient: &http.Client{Transport: outcomeRT{}},
						Resilience: Resilience{MaxRetries: 1, RetryBaseDelay: time.Microsecond, BreakerFailures: 3, BreakerCooldown: cooldown,
							OnBreakerChange:         func(from, to CircuitState) { note(fmt.Sprint("process ", from, "->", to)) },
							OnMerchantBreakerChange: func(m string, from, to CircuitState) { note(fmt.Sprint(m, " ", from, "->", to)) }}})
					s.c.breaker.fastClosed = fast
					return s
				}
				fast, slow := mk(true), mk(false)
				rng := rand.New(rand.NewPCG(seed, 25))
				merchants := []string{"A", "B", "C", "D"}
				pick := func() string {
					n := rng.IntN(100)
					for _, o := range outcomes {
						if n -= o.weight; n < 0 {
							return o.kind
						}
					}
					return "ok"
				}
				fastCalls := 0
				for step := range 160 {
					if step == 60 || step == 120 {
						time.Sleep(cooldown + 50*time.Millisecond) // open circuits become half-open
					}
					m, kind := merchants[rng.IntN(len(merchants))], pick()
					id := fmt.Sprint(kind, "-", step)
					var errs [2]string
					for i, s := range []*side{slow, fast} {
						ctx, cancel := context.WithCancel(merchantCtx(m))
						ctx = context.WithValue(ctx, cancelKey{}, cancel)
						b := s.c.breaker
						cv, _ := credentialsFrom(ctx)
						mm := b.merchants.get(cv.merchant.short(), time.Now().UnixNano())
						if i == 1 && !b.notClosed.Load() && b.quiet.is() && (mm == nil || !mm.notClosed.Load() && mm.quiet.is()) {
							fastCalls++
						}
						_, err := s.c.GetPayment(ctx, id)
						cancel()
						errs[i] = fmt.Sprint(err)
					}
					if errs[0] != errs[1] {
						t.Fatalf("step %d (%s, %s): without the fast path %q, with it %q", step, m, id, errs[0], errs[1])
					}
					if a, b := slow.c.BreakerState(), fast.c.BreakerState(); a != b {
						t.Fatalf("step %d (%s, %s): process circuit %v without the fast path, %v with it", step, m, id, a, b)
					}
					if a, b := slow.c.breaker.cb.Counts().ConsecutiveFailures, fast.c.breaker.cb.Counts().ConsecutiveFailures; a != b {
						t.Fatalf("step %d (%s, %s): process circuit's consecutive failures %d without the fast path, %d with it", step, m, id, a, b)
					}
					for _, name := range merchants {
						cv, _ := credentialsFrom(merchantCtx(name))
						var got [2]string
						for i, s := range []*side{slow, fast} {
							if e := s.c.breaker.merchants.get(cv.merchant.short(), time.Now().UnixNano()); e != nil {
								got[i] = fmt.Sprint(e.cb.State(), " ", e.cb.Counts().ConsecutiveFailures, " trusted ", e.trusted.Load())
							}
						}
						if got[0] != got[1] {
							t.Fatalf("step %d (%s, %s): merchant %s's circuit %q without the fast path, %q with it", step, m, id, name, got[0], got[1])
						}
					}
				}
				slow.mu.Lock()
				fast.mu.Lock()
				defer slow.mu.Unlock()
				defer fast.mu.Unlock()
				if a, b := strings.Join(slow.changes, ", "), strings.Join(fast.changes, ", "); a != b {
					t.Errorf("state changes without the fast path:\n  %s\nwith it:\n  %s", a, b)
				}
				if len(slow.changes) < 2 {
					t.Errorf("only %d state changes: the sequence does not exercise the circuits", len(slow.changes))
				}
				if fastCalls < 20 {
					t.Errorf("the fast path was open to %d calls of 160; want at least 20", fastCalls)
				}
				t.Logf("%d state changes; %d of 160 calls on the fast path", len(slow.changes), fastCalls)
			})
		})
	}
}

// reverifyGobreaker is what to re-read in gobreaker before raising verifiedGobreaker.
const reverifyGobreaker = `re-verify in gobreaker.go and counter.go:
  - afterRequest of a success or an exclusion in StateClosed changes only
    Counts' Requests, TotalSuccesses, ConsecutiveSuccesses (and zeroes
    ConsecutiveFailures) and TotalExclusions, and never the state;
  - with Settings.Interval 0 and no BucketPeriod, a closed circuit's
    generation changes only with its state (OnStateChange);
  - Execute counts a failure in StateClosed as onFailure, then ReadyToTrip;
then run TestClosedFastPathSameAsGobreaker and set verifiedGobreaker`

// TestGobreakerFence: the fast path was verified against one gobreaker
// release; the module's go.mod names it. A bump fails here with what to
// re-verify.
func TestGobreakerFence(t *testing.T) {
	t.Parallel()
	gomod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	want := "github.com/sony/gobreaker/v2 " + verifiedGobreaker
	if !bytes.Contains(gomod, []byte(want)) {
		t.Fatalf("go.mod does not require %s: the closed-circuit fast path (closedfast.go) is off with any other gobreaker.\n%s", want, reverifyGobreaker)
	}
	if !gobreakerVerified {
		t.Fatalf("the fast path is off in the test binary (gobreaker %q)", gobreakerVersion())
	}
}

// blockRT is outcomeRT, but a call of an id starting "block" waits for
// release (after telling started).
type blockRT struct {
	outcomeRT
	started, release chan struct{}
}

func (b *blockRT) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasPrefix(r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:], "block") {
		b.started <- struct{}{}
		<-b.release
		r2 := r.Clone(r.Context())
		r2.URL.Path = strings.Replace(r2.URL.Path, "block", "ok", 1)
		resp, err := b.outcomeRT.RoundTrip(r2)
		if resp != nil {
			body, _ := io.ReadAll(resp.Body)
			body = bytes.Replace(body, []byte(`"ok`), []byte(`"block`), 1)
			resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		}
		return resp, err
	}
	return b.outcomeRT.RoundTrip(r)
}

// TestClosedFastPathSuccessAfterFailure: a call that began on quiet
// circuits (the fast path) and succeeds after another call's failure was
// counted resets the consecutive failures, as gobreaker's Execute would
// have (its success ends after the failure), with the fast path and
// without.
func TestClosedFastPathSuccessAfterFailure(t *testing.T) {
	t.Parallel()
	for _, fast := range []bool{false, true} {
		t.Run(fmt.Sprint("fast path ", fast), func(t *testing.T) {
			t.Parallel()
			rt := &blockRT{started: make(chan struct{}), release: make(chan struct{})}
			c := newClient(t, Config{BaseURL: "http://rest.invalid", HTTPClient: &http.Client{Transport: rt},
				Resilience: Resilience{BreakerFailures: 3, BreakerCooldown: time.Hour}})
			c.breaker.fastClosed = fast
			ctx := merchantCtx("A")
			if _, err := c.GetPayment(ctx, "ok-1"); err != nil { // the merchant's circuit exists, trusted
				t.Fatal(err)
			}
			done := make(chan error)
			go func() { _, err := c.GetPayment(ctx, "block-2"); done <- err }()
			<-rt.started
			if _, err := c.GetPayment(ctx, "e500-3"); KindOf(err) != KindUpstream {
				t.Fatalf("e500: %v", err)
			}
			cv, _ := credentialsFrom(ctx)
			m := c.breaker.merchants.get(cv.merchant.short(), time.Now().UnixNano())
			if n := m.cb.Counts().ConsecutiveFailures; n != 1 {
				t.Fatalf("merchant's consecutive failures %d after the 500; want 1", n)
			}
			close(rt.release)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if n := m.cb.Counts().ConsecutiveFailures; n != 0 {
				t.Errorf("merchant's consecutive failures %d after the later success; want 0", n)
			}
			// Quiet again after the next call (at once with the fast path,
			// whose success was handed over after the failure).
			if _, err := c.GetPayment(ctx, "ok-4"); err != nil {
				t.Fatal(err)
			}
			if !m.quiet.is() || !c.breaker.quiet.is() {
				t.Error("the circuits are not quiet after two successes")
			}
		})
	}
}
