package restclient

// Calls on closed, quiet circuits (no failure counted since a success) without
// gobreaker, so that calls do not all take the process-wide circuit's mutex:
// there a success changes nothing gobreaker reads again, so only a failure is
// handed to it afterwards, to the circuits whose state has not changed
// (TestClosedFastPathSameAsGobreaker). It mirrors gobreaker's counting, so it
// is on only with the version verified (TestGobreakerFence).

import (
	"context"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/sony/gobreaker/v2"
)

// verifiedGobreaker is the gobreaker release closedCall was verified against;
// before raising it, re-read what reverifyGobreaker (closedfast_test.go)
// lists (TestGobreakerFence).
const verifiedGobreaker = "v2.4.0"

// gobreakerVerified: the binary holds verifiedGobreaker, or does not say.
var gobreakerVerified = gobreakerVersion() == verifiedGobreaker || gobreakerVersion() == ""

func gobreakerVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, d := range info.Deps {
		if d.Path == "github.com/sony/gobreaker/v2" {
			if d.Replace != nil {
				return d.Replace.Version
			}
			return d.Version
		}
	}
	return ""
}

// quietness: a circuit's consecutive failures are known to be zero. failing
// and failed count failures before and after gobreaker does; clean is the
// highest failed read before a success's Execute.
type quietness struct {
	failing atomic.Uint64
	failed  atomic.Uint64
	clean   atomic.Uint64
}

func (q *quietness) is() bool    { return q.failing.Load() == q.clean.Load() }
func (q *quietness) seq() uint64 { return q.failed.Load() }

// counting is told what gobreaker counts (errSkip: nothing) before; counted
// after, with seq.
func (q *quietness) counting(count error) {
	if unhealthy(count) {
		q.failing.Add(1)
	}
}

func (q *quietness) counted(count error, seq uint64) {
	switch {
	case count == errSkip:
	case unhealthy(count):
		q.failed.Add(1)
	default: // a success
		for {
			c := q.clean.Load()
			if c >= seq || q.clean.CompareAndSwap(c, seq) {
				return
			}
		}
	}
}

// settle replays a count (errSkip: none) to a circuit of the same state: a
// failure, or a success after one.
func (q *quietness) settle(cb *gobreaker.CircuitBreaker[struct{}], same bool, count error) {
	if count != errSkip && same && (unhealthy(count) || !q.is()) {
		q.replay(cb, count)
	}
}

// replay hands cb a count (never errSkip) of a call made without it.
func (q *quietness) replay(cb *gobreaker.CircuitBreaker[struct{}], count error) {
	seq := q.seq()
	q.counting(count)
	_, _ = cb.Execute(func() (struct{}, error) { return struct{}{}, count })
	q.counted(count, seq)
}

// closedCall makes call on closed, quiet circuits, then settles each's count
// (a panic: a success).
func (b *breaker) closedCall(ctx context.Context, m *merchant, key uint64, start time.Time, call func() error) (err error) {
	gen := b.gen.Load()
	var mGen uint64
	if m != nil {
		mGen = m.gen.Load()
	}
	panicked := true
	defer func() {
		if panicked {
			if m != nil {
				m.quiet.settle(m.cb, m.gen.Load() == mGen, nil)
			}
			b.quiet.settle(b.cb, b.gen.Load() == gen, nil)
		}
	}()
	err = call()
	panicked = false
	count := err // what the merchant's circuit counts (withResilience's inner closure)
	if err != nil && (ctx.Err() != nil || localExhaustion(err)) {
		count = errSkip
	}
	if m != nil {
		m.quiet.settle(m.cb, m.gen.Load() == mGen, count)
	}
	bCount := b.account(ctx, err, m, key, start.UnixNano())
	b.quiet.settle(b.cb, b.gen.Load() == gen, bCount)
	b.flush()
	return err
}
