package livepoll

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeClock drives a hub's pollers: sleep returns at once and moves the
// clock, and every wait is recorded, so that backoff, pauses, the settled
// watch and the idle timeout are checked by value, never by how fast the
// machine is.
type fakeClock struct {
	mu    sync.Mutex
	t     time.Time
	waits []time.Duration
	// gate, when set before the first subscription, runs before each wait:
	// a test holds the poller there until it has read what was sent.
	gate func()
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) sleep(ctx context.Context, d time.Duration) bool {
	if c.gate != nil {
		c.gate()
	}
	if ctx.Err() != nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits = append(c.waits, d)
	c.t = c.t.Add(d)
	return true
}

func (c *fakeClock) recorded() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits...)
}

// newTestHub returns a hub on a fake clock, closed when the test ends.
func newTestHub(t *testing.T, cfg Config) (*Hub, *fakeClock) {
	t.Helper()
	h, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	clk := &fakeClock{t: time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)}
	h.now, h.sleep = clk.now, clk.sleep
	t.Cleanup(h.Close)
	return h, clk
}

// script is a fetch that answers step(n) for its n-th call (from 0) until
// step says park; then it waits for its context, and parked is closed.
type script struct {
	step   func(n int) (s Snapshot, err error, park bool)
	served atomic.Int64 // calls answered (parked ones not counted)
	parked chan struct{}
	once   sync.Once
}

func newScript(step func(n int) (Snapshot, error, bool)) *script {
	return &script{step: step, parked: make(chan struct{})}
}

func (f *script) fetch(ctx context.Context) (Snapshot, error) {
	n := int(f.served.Load())
	s, err, park := f.step(n)
	if park {
		f.once.Do(func() { close(f.parked) })
		<-ctx.Done()
		return Snapshot{}, ctx.Err()
	}
	f.served.Add(1)
	return s, err
}

// waitParked waits (generously: no timing is asserted) for the script to
// run out of steps.
func (f *script) waitParked(t *testing.T) {
	t.Helper()
	select {
	case <-f.parked:
	case <-time.After(10 * time.Second):
		t.Fatalf("the poller did not reach the end of its script (%d calls)", f.served.Load())
	}
}

func state(fp string, ph Phase) Snapshot { return Snapshot{Value: fp, Fingerprint: fp, Phase: ph} }

// states answers fps in turn, then parks.
func states(ph Phase, fps ...string) func(int) (Snapshot, error, bool) {
	return func(n int) (Snapshot, error, bool) {
		if n >= len(fps) {
			return Snapshot{}, nil, true
		}
		return state(fps[n], ph), nil, false
	}
}

var key = Key{Merchant: "m1", Kind: "payment", ID: "pay_1"}

func subscribe(t *testing.T, h *Hub, k Key, f FetchFunc) *Subscription {
	t.Helper()
	s, err := h.Subscribe(context.Background(), k, f)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// next receives one event, failing (after a generous wait) if none comes.
func next(t *testing.T, s *Subscription) (Event, bool) {
	t.Helper()
	select {
	case ev, ok := <-s.Events():
		return ev, ok
	case <-time.After(10 * time.Second):
		t.Fatal("no event")
		return Event{}, false
	}
}

// drain reads until the subscription ends and returns the events.
func drain(t *testing.T, s *Subscription) []Event {
	t.Helper()
	var out []Event
	for {
		ev, ok := next(t, s)
		if !ok {
			return out
		}
		out = append(out, ev)
	}
}

func fingerprints(evs []Event) string {
	var b strings.Builder
	for i, ev := range evs {
		if i > 0 {
			b.WriteByte(',')
		}
		if ev.Err != nil {
			b.WriteString("err")
		} else {
			b.WriteString(ev.Snapshot.Fingerprint)
		}
	}
	return b.String()
}

// within reports whether got is d moved by at most the jitter.
func within(got, d time.Duration) bool {
	return got >= time.Duration(float64(d)*(1-jitter)) && got <= time.Duration(float64(d)*(1+jitter))
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	const s = time.Second
	fps := []string{"a", "a", "a", "a", "a", "a", "a", "a", "a", "b", "b", "b"}
	h, clk := newTestHub(t, Config{Interval: 2 * s})
	f := newScript(states(PhaseOpen, fps...))
	var polls sync.Map
	h.cfg.OnPoll = func(kind string, o Outcome) {
		v, _ := polls.LoadOrStore(kind+"/"+string(o), new(atomic.Int64))
		v.(*atomic.Int64).Add(1)
	}
	sub := subscribe(t, h, key, f.fetch)
	f.waitParked(t)
	waits := clk.recorded()
	want := []time.Duration{2 * s, 3 * s, 4 * s, 5 * s, 6 * s, 7 * s, 8 * s, 8 * s, 8 * s, 2 * s, 3 * s, 4 * s}
	if len(waits) != len(want) {
		t.Fatalf("waits %v, want about %v", waits, want)
	}
	for _, c := range []struct {
		name     string
		from, to int
	}{
		{"the first state: Interval", 0, 1},
		{"unchanged: half an Interval more each time", 1, 6},
		{"capped at 4 x Interval", 6, 9},
		{"a change resets to Interval", 9, 12},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			for i := c.from; i < c.to; i++ {
				if !within(waits[i], want[i]) {
					t.Errorf("wait %d = %v, want %v ±10%%", i, waits[i], want[i])
				}
			}
		})
	}
	t.Run("unread transitions queue, each once", func(t *testing.T) {
		sub.Close()
		if got := fingerprints(drain(t, sub)); got != "a,b" {
			t.Errorf("events %q, want a,b", got)
		}
	})
	t.Run("OnPoll by kind and outcome", func(t *testing.T) {
		for k, want := range map[string]int64{"payment/changed": 2, "payment/unchanged": 10} {
			v, ok := polls.Load(k)
			if !ok || v.(*atomic.Int64).Load() != want {
				t.Errorf("%s: got %v, want %d", k, v, want)
			}
		}
	})
}

func TestJitter(t *testing.T) {
	t.Parallel()
	const d = time.Second
	lo, hi := time.Duration(1<<62), time.Duration(0)
	for range 1000 {
		j := jittered(d)
		lo, hi = min(lo, j), max(hi, j)
	}
	if lo < 900*time.Millisecond || hi > 1100*time.Millisecond {
		t.Errorf("jitter range [%v, %v], want within ±10%%", lo, hi)
	}
	if hi-lo < 100*time.Millisecond {
		t.Errorf("jitter range [%v, %v] is too narrow to spread pollers", lo, hi)
	}
}

// rateLimited is a fetch error carrying a Retry-After.
type rateLimited struct{ d time.Duration }

func (e rateLimited) Error() string             { return "rate limited" }
func (e rateLimited) RetryAfter() time.Duration { return e.d }

func TestRateLimitPause(t *testing.T) {
	t.Parallel()
	const s = time.Second
	tests := []struct {
		name       string
		retryAfter time.Duration
		want       time.Duration // the wait after the 429; jittered when it is the backoff's
		exact      bool
	}{
		{"Retry-After longer than the wait: paused that long", 7 * s, 7 * s, true},
		{"Retry-After shorter than the wait: the wait", s / 2, 3 * s, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h, clk := newTestHub(t, Config{Interval: 2 * s})
			var outcomes []Outcome
			var mu sync.Mutex
			h.cfg.OnPoll = func(_ string, o Outcome) { mu.Lock(); outcomes = append(outcomes, o); mu.Unlock() }
			read := make(chan struct{})
			f := newScript(func(n int) (Snapshot, error, bool) {
				switch n {
				case 0:
					return state("a", PhaseOpen), nil, false
				case 1:
					<-read // the state is read: the error cannot be coalesced away
					return Snapshot{}, rateLimited{tt.retryAfter}, false
				}
				return Snapshot{}, nil, true
			})
			sub := subscribe(t, h, key, f.fetch)
			if ev, _ := next(t, sub); ev.Snapshot.Fingerprint != "a" {
				t.Fatalf("first event %+v", ev)
			}
			close(read)
			f.waitParked(t)
			waits := clk.recorded()
			if len(waits) != 2 {
				t.Fatalf("waits %v", waits)
			}
			if tt.exact && waits[1] != tt.want || !tt.exact && !within(waits[1], tt.want) {
				t.Errorf("wait after the 429 = %v, want %v", waits[1], tt.want)
			}
			ev, _ := next(t, sub)
			var ra RetryAfterer
			if !errors.As(ev.Err, &ra) || ra.RetryAfter() != tt.retryAfter {
				t.Errorf("error event %v", ev.Err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(outcomes) != 2 || outcomes[1] != OutcomeRateLimited {
				t.Errorf("outcomes %v", outcomes)
			}
		})
	}
}

func TestPhases(t *testing.T) {
	t.Parallel()
	const watch = time.Minute
	tests := []struct {
		name     string
		step     func(n int) (Snapshot, error, bool)
		events   string
		minCalls int64
		maxCalls int64
		wantErr  error
	}{
		{
			name: "final: sent, then complete",
			step: func(n int) (Snapshot, error, bool) {
				return []Snapshot{state("PENDING", PhaseOpen), state("FAILED", PhaseFinal)}[min(n, 1)], nil, n > 1
			},
			events: "PENDING,FAILED", minCalls: 2, maxCalls: 2,
		},
		{
			name: "settled: watched for WatchAfterSettled, then complete",
			step: func(n int) (Snapshot, error, bool) {
				if n == 0 {
					return state("PENDING", PhaseOpen), nil, false
				}
				return state("SUCCEEDED", PhaseSettled), nil, n > 1000
			},
			// one minute at waits growing 2,3,...8 s: between 60/8.8 and 60/1.8 polls after the change
			events: "PENDING,SUCCEEDED", minCalls: 2 + 6, maxCalls: 2 + 34,
		},
		{
			name: "settled, then refunded within the watch",
			step: func(n int) (Snapshot, error, bool) {
				return []Snapshot{state("PENDING", PhaseOpen), state("SUCCEEDED", PhaseSettled), state("SUCCEEDED", PhaseSettled), state("REFUNDED", PhaseFinal)}[min(n, 3)], nil, n > 3
			},
			events: "PENDING,SUCCEEDED,REFUNDED", minCalls: 4, maxCalls: 4,
		},
		{
			name: "unchanged for IdleTimeout: ErrIdle",
			step: func(n int) (Snapshot, error, bool) { return state("PENDING", PhaseOpen), nil, n > 1000 },
			// 5 minutes at waits growing to 8 s: about 40 polls
			events: "PENDING", minCalls: 300 / 9, maxCalls: 300/2 + 1, wantErr: ErrIdle,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h, clk := newTestHub(t, Config{Interval: 2 * time.Second, WatchAfterSettled: watch, IdleTimeout: 5 * time.Minute})
			var current atomic.Pointer[Subscription]
			clk.gate = func() { readAll(t, current.Load) }
			f := newScript(tt.step)
			sub := subscribe(t, h, key, f.fetch)
			current.Store(sub)
			var evs []Event
			for {
				// read as they come, so that no state is coalesced away
				ev, ok := next(t, sub)
				if !ok {
					break
				}
				evs = append(evs, ev)
			}
			if got := fingerprints(evs); got != tt.events {
				t.Errorf("events %q, want %q", got, tt.events)
			}
			if err := sub.Err(); !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Errorf("Err() = %v, want %v", err, tt.wantErr)
			}
			if n := f.served.Load(); n < tt.minCalls || n > tt.maxCalls {
				t.Errorf("%d fetches, want %d..%d", n, tt.minCalls, tt.maxCalls)
			}
			waitStats(t, h, Stats{})
		})
	}
}

// readAll waits (generously) until the subscription load returns is set
// and has no unread event.
func readAll(t *testing.T, load func() *Subscription) {
	deadline := time.Now().Add(10 * time.Second)
	for s := load(); s == nil || len(s.c) > 0; s = load() {
		if time.Now().After(deadline) {
			t.Error("the subscriber did not read")
			return
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// waitStats waits (generously) until the hub's counts are want: a
// subscription's end on a context cancel runs in a callback of its own.
func waitStats(t *testing.T, h *Hub, want Stats) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for h.Stats() != want {
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v, want %+v", h.Stats(), want)
		}
		time.Sleep(time.Millisecond)
	}
}

var errNotFound = errors.New("payment not found")

func TestPermanentError(t *testing.T) {
	t.Parallel()
	h, _ := newTestHub(t, Config{})
	f := newScript(func(n int) (Snapshot, error, bool) { return Snapshot{}, Permanent(errNotFound), n > 0 })
	sub := subscribe(t, h, key, f.fetch)
	evs := drain(t, sub)
	if len(evs) != 1 || evs[0].Err != errNotFound {
		t.Errorf("events %+v, want the error itself, once", evs)
	}
	if sub.Err() != errNotFound {
		t.Errorf("Err() = %v", sub.Err())
	}
	if n := f.served.Load(); n != 1 {
		t.Errorf("%d fetches after a permanent error, want 1", n)
	}
	waitStats(t, h, Stats{})
}

func TestTransientErrorKeepsPolling(t *testing.T) {
	t.Parallel()
	h, _ := newTestHub(t, Config{})
	boom := errors.New("503")
	read := make(chan struct{})
	f := newScript(func(n int) (Snapshot, error, bool) {
		switch n {
		case 0:
			return Snapshot{}, boom, false
		case 1:
			<-read
			return state("a", PhaseOpen), nil, false
		}
		return Snapshot{}, nil, true
	})
	sub := subscribe(t, h, key, f.fetch)
	first, _ := next(t, sub)
	close(read)
	f.waitParked(t)
	second, _ := next(t, sub)
	if first.Err != boom || second.Snapshot.Fingerprint != "a" {
		t.Errorf("events %+v, %+v", first, second)
	}
	t.Run("a new subscriber gets the state, not the old error", func(t *testing.T) {
		late := subscribe(t, h, key, f.fetch)
		select {
		case ev := <-late.Events():
			if ev.Err != nil || ev.Snapshot.Fingerprint != "a" {
				t.Errorf("first event %+v", ev)
			}
		default:
			t.Error("no event at once")
		}
	})
}

func TestFetchPanic(t *testing.T) {
	t.Parallel()
	h, _ := newTestHub(t, Config{})
	sub := subscribe(t, h, key, func(context.Context) (Snapshot, error) { panic("secret-looking value") })
	evs := drain(t, sub)
	if len(evs) != 1 || !errors.Is(evs[0].Err, ErrFetchPanicked) || !errors.Is(sub.Err(), ErrFetchPanicked) {
		t.Errorf("events %+v, Err %v", evs, sub.Err())
	}
	if strings.Contains(sub.Err().Error(), "secret") {
		t.Error("the panic value reached the error")
	}
}

func TestSharedPoller(t *testing.T) {
	t.Parallel()
	h, _ := newTestHub(t, Config{})
	f := newScript(states(PhaseOpen, "a"))
	first := subscribe(t, h, key, f.fetch)
	if ev, _ := next(t, first); ev.Snapshot.Fingerprint != "a" {
		t.Fatalf("first event %+v", ev)
	}
	f.waitParked(t)
	other := newScript(states(PhaseOpen, "never"))
	subs := []*Subscription{first}
	t.Run("a later subscriber gets the latest state at once", func(t *testing.T) {
		for i := range 99 {
			s := subscribe(t, h, key, other.fetch)
			subs = append(subs, s)
			select {
			case ev := <-s.Events():
				if ev.Snapshot.Fingerprint != "a" {
					t.Errorf("subscriber %d: event %+v", i, ev)
				}
			default:
				t.Fatalf("subscriber %d: no event at once", i)
			}
		}
	})
	t.Run("one poller, one fetch", func(t *testing.T) {
		if st := h.Stats(); st != (Stats{Subscriptions: 100, Pollers: 1}) {
			t.Errorf("stats %+v", st)
		}
		if n := f.served.Load() + other.served.Load(); n != 1 {
			t.Errorf("%d fetches for 100 subscribers", n)
		}
	})
	t.Run("the poller stops with its last subscriber", func(t *testing.T) {
		for _, s := range subs[1:] {
			s.Close()
		}
		if st := h.Stats(); st != (Stats{Subscriptions: 1, Pollers: 1}) {
			t.Errorf("after 99 left: %+v", st)
		}
		first.Close()
		if st := h.Stats(); st != (Stats{}) {
			t.Errorf("after the last left: %+v", st)
		}
		done := make(chan struct{})
		go func() { h.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("the poller goroutine did not return")
		}
		if first.Err() != context.Canceled {
			t.Errorf("Err() = %v", first.Err())
		}
	})
}

// TestTransitions: every change is one event, with the id after its
// predecessor's, in order; a subscriber that leaves MaxKept unread is
// ended (ErrTooSlow) after the ones it was sent, never with a gap.
func TestTransitions(t *testing.T) {
	t.Parallel()
	h, clk := newTestHub(t, Config{})
	// The poller waits (its clock's gate) until fast has read what it
	// was sent: fast is never too slow, however the goroutines run.
	var fastSub atomic.Pointer[Subscription]
	clk.gate = func() {
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Microsecond) {
			if s := fastSub.Load(); s == nil || len(s.c) == 0 {
				return
			}
		}
	}
	start := make(chan struct{})
	const n = 50
	f := newScript(func(i int) (Snapshot, error, bool) {
		if i == 0 {
			<-start
		}
		return state(strconv.Itoa(i), PhaseOpen), nil, i >= n
	})
	slow := subscribe(t, h, key, f.fetch)
	fast := subscribe(t, h, key, f.fetch)
	fastSub.Store(fast)
	got := make(chan []Event)
	go func() {
		var seen []Event
		for ev := range fast.Events() {
			seen = append(seen, ev)
		}
		got <- seen
	}()
	close(start)
	f.waitParked(t) // the poller finished while slow read nothing: it never waited
	inOrder := func(t *testing.T, evs []Event, want int) {
		t.Helper()
		if len(evs) != want {
			t.Fatalf("%d events, want %d: %s", len(evs), want, fingerprints(evs))
		}
		for i, ev := range evs {
			if ev.Snapshot.Fingerprint != strconv.Itoa(i) || ev.ID != evs[0].ID+uint64(i) {
				t.Fatalf("event %d: id %d state %q (first id %d)", i, ev.ID, ev.Snapshot.Fingerprint, evs[0].ID)
			}
		}
	}
	t.Run("a slow subscriber ends past MaxKept unread, each sent once in order", func(t *testing.T) {
		inOrder(t, drain(t, slow), MaxKept+1) // its buffer: MaxKept states and room for an error
		if !errors.Is(slow.Err(), ErrTooSlow) {
			t.Errorf("Err() = %v, want ErrTooSlow", slow.Err())
		}
	})
	t.Run("a fast subscriber sees every transition once, in order", func(t *testing.T) {
		fast.Close()
		inOrder(t, <-got, n)
	})
}

// TestErrorNeverQueues: a failed fetch is sent only to a subscriber with
// nothing unread.
func TestErrorNeverQueues(t *testing.T) {
	t.Parallel()
	h, _ := newTestHub(t, Config{})
	steps := []func() (Snapshot, error){
		func() (Snapshot, error) { return state("s1", PhaseOpen), nil },
		func() (Snapshot, error) { return Snapshot{}, errors.New("upstream down") },
	}
	f := newScript(func(i int) (Snapshot, error, bool) {
		if i >= len(steps) {
			return Snapshot{}, nil, true
		}
		s, err := steps[i]()
		return s, err, false
	})
	sub := subscribe(t, h, key, f.fetch)
	f.waitParked(t)
	sub.Close()
	if got := fingerprints(drain(t, sub)); got != "s1" {
		t.Errorf("events %q, want the unread state alone", got)
	}
}

func TestBounds(t *testing.T) {
	t.Parallel()
	h, _ := newTestHub(t, Config{MaxPerMerchant: 2, MaxSubscriptions: 3})
	var fetches atomic.Int64
	fetch := func(ctx context.Context) (Snapshot, error) {
		fetches.Add(1)
		<-ctx.Done()
		return Snapshot{}, ctx.Err()
	}
	k := func(m, id string) Key { return Key{Merchant: m, Kind: "payment", ID: id} }
	a1 := subscribe(t, h, k("a", "1"), fetch)
	subscribe(t, h, k("a", "2"), fetch)
	waitFetches := func(want int64) {
		deadline := time.Now().Add(10 * time.Second)
		for fetches.Load() != want && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
	}
	waitFetches(2)
	tests := []struct {
		name  string
		key   Key
		scope string
	}{
		{"merchant a over its bound", k("a", "3"), ScopeMerchant},
		{"merchant a over its bound on a polled key", k("a", "1"), ScopeMerchant},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := h.Subscribe(context.Background(), tt.key, fetch)
			var le *LimitError
			if !errors.As(err, &le) || le.Scope != tt.scope || !errors.Is(err, ErrTooManySubscriptions) {
				t.Fatalf("err = %v, want a %s LimitError", err, tt.scope)
			}
		})
	}
	subscribe(t, h, k("b", "1"), fetch) // b may: its own bound, and the process has room
	t.Run("process over its bound", func(t *testing.T) {
		_, err := h.Subscribe(context.Background(), k("c", "1"), fetch)
		var le *LimitError
		if !errors.As(err, &le) || le.Scope != ScopeProcess || le.Limit != 3 {
			t.Fatalf("err = %v", err)
		}
		if strings.Contains(err.Error(), `"c"`) || strings.Contains(err.Error(), "merchant c") {
			t.Errorf("the error names the merchant: %v", err)
		}
	})
	t.Run("refused before any work", func(t *testing.T) {
		waitFetches(3)
		if n := fetches.Load(); n != 3 {
			t.Errorf("%d fetches, want 3 (one per admitted key)", n)
		}
		if st := h.Stats(); st != (Stats{Subscriptions: 3, Pollers: 3}) {
			t.Errorf("stats %+v", st)
		}
	})
	t.Run("a slot is free again once left", func(t *testing.T) {
		a1.Close()
		if _, err := h.Subscribe(context.Background(), k("a", "3"), fetch); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("no entry left for a merchant with none", func(t *testing.T) {
		h.mu.Lock()
		defer h.mu.Unlock()
		if _, ok := h.perMerchant["c"]; ok {
			t.Error("a refused merchant has an entry")
		}
	})
}

func TestSubscribeRefusals(t *testing.T) {
	t.Parallel()
	h, _ := newTestHub(t, Config{})
	ok := func(context.Context) (Snapshot, error) { return Snapshot{}, nil }
	done, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name  string
		ctx   context.Context
		key   Key
		fetch FetchFunc
		want  error
	}{
		{"no merchant", context.Background(), Key{Kind: "payment", ID: "x"}, ok, ErrInvalidKey},
		{"no kind", context.Background(), Key{Merchant: "m", ID: "x"}, ok, ErrInvalidKey},
		{"no id", context.Background(), Key{Merchant: "m", Kind: "payment"}, ok, ErrInvalidKey},
		{"id too long", context.Background(), Key{Merchant: "m", Kind: "payment", ID: strings.Repeat("x", MaxKeyBytes+1)}, ok, ErrInvalidKey},
		{"nil fetch", context.Background(), key, nil, ErrInvalidKey},
		{"done context", done, key, ok, context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := h.Subscribe(tt.ctx, tt.key, tt.fetch); !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}
	if st := h.Stats(); st != (Stats{}) {
		t.Errorf("stats %+v", st)
	}
}

func TestEnds(t *testing.T) {
	t.Parallel()
	parked := func(ctx context.Context) (Snapshot, error) {
		<-ctx.Done()
		return Snapshot{}, ctx.Err()
	}
	cause := errors.New("client went away")
	tests := []struct {
		name string
		cfg  Config
		end  func(h *Hub, cancel context.CancelCauseFunc, s *Subscription)
		want error
	}{
		{"context cancelled", Config{}, func(_ *Hub, cancel context.CancelCauseFunc, _ *Subscription) { cancel(nil) }, context.Canceled},
		{"context cancelled with a cause", Config{}, func(_ *Hub, cancel context.CancelCauseFunc, _ *Subscription) { cancel(cause) }, cause},
		{"Close", Config{}, func(_ *Hub, _ context.CancelCauseFunc, s *Subscription) { s.Close() }, context.Canceled},
		{"hub closed", Config{}, func(h *Hub, _ context.CancelCauseFunc, _ *Subscription) { h.Close() }, ErrClosed},
		{"maximum lifetime", Config{MaxLifetime: time.Millisecond}, func(*Hub, context.CancelCauseFunc, *Subscription) {}, ErrLifetime},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, _ := newTestHub(t, tt.cfg)
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			s, err := h.Subscribe(ctx, key, parked)
			if err != nil {
				t.Fatal(err)
			}
			tt.end(h, cancel, s)
			if evs := drain(t, s); len(evs) != 0 {
				t.Errorf("events %+v", evs)
			}
			if err := s.Err(); err != tt.want {
				t.Errorf("Err() = %v, want %v", err, tt.want)
			}
			waitStats(t, h, Stats{})
			s.Close() // twice: nothing
		})
	}
	t.Run("Subscribe after Close", func(t *testing.T) {
		h, _ := newTestHub(t, Config{})
		h.Close()
		if _, err := h.Subscribe(context.Background(), key, parked); err != ErrClosed {
			t.Errorf("err = %v", err)
		}
	})
}

func TestConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"zero: the defaults", Config{}, true},
		{"negative interval", Config{Interval: -1}, false},
		{"negative lifetime", Config{MaxLifetime: -1}, false},
		{"negative bound", Config{MaxPerMerchant: -1}, false},
		{"ceiling under the interval", Config{Interval: time.Second, MaxInterval: time.Second / 2}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h, err := New(tt.cfg)
			if (err == nil) != tt.ok {
				t.Fatalf("err = %v", err)
			}
			if h != nil {
				h.Close()
			}
		})
	}
	t.Run("defaults", func(t *testing.T) {
		h, _ := New(Config{})
		defer h.Close()
		want := Config{
			Interval: DefaultInterval, MaxInterval: 4 * DefaultInterval, WatchAfterSettled: DefaultWatchAfterSettled,
			MaxLifetime: DefaultMaxLifetime, IdleTimeout: DefaultIdleTimeout,
			MaxPerMerchant: DefaultMaxPerMerchant, MaxSubscriptions: DefaultMaxSubscriptions, MaxPending: DefaultMaxPending,
			ResumeWindow: DefaultResumeWindow, MaxHistories: DefaultMaxSubscriptions,
		}
		if !reflect.DeepEqual(h.cfg, want) {
			t.Errorf("cfg %+v, want %+v", h.cfg, want)
		}
	})
}

// TestIdleRestartsOnJoin: a subscriber that comes to a resource unchanged
// for a while is not ended by the older subscribers' idle clock.
func TestIdleRestartsOnJoin(t *testing.T) {
	t.Parallel()
	const idle = time.Minute
	h, clk := newTestHub(t, Config{Interval: 2 * time.Second, IdleTimeout: idle})
	start := clk.now()
	var late atomic.Pointer[Subscription]
	clk.gate = func() {
		if late.Load() == nil && clk.now().Sub(start) >= 50*time.Second {
			s, err := h.Subscribe(context.Background(), key, func(context.Context) (Snapshot, error) { return Snapshot{}, nil })
			if err != nil {
				t.Error(err)
				return
			}
			late.Store(s)
		}
	}
	f := newScript(func(n int) (Snapshot, error, bool) { return state("PENDING", PhaseOpen), nil, n > 1000 })
	first := subscribe(t, h, key, f.fetch)
	drain(t, first)
	if first.Err() != ErrIdle || late.Load() == nil || late.Load().Err() != ErrIdle {
		t.Fatalf("Err() = %v; late joined: %v", first.Err(), late.Load() != nil)
	}
	if ended := clk.now().Sub(start); ended < 50*time.Second+idle {
		t.Errorf("ended %v after the start, less than the idle timeout after the late join", ended)
	}
}

// TestResume: a subscriber that gives the last event id it handled gets
// the transitions after it, in order, then the live ones; an id the hub
// does not keep is ErrResumeExpired, before any work.
func TestResume(t *testing.T) {
	t.Parallel()
	h, _ := newTestHub(t, Config{ResumeWindow: 200 * time.Millisecond})
	release := make(chan struct{})
	f := newScript(func(i int) (Snapshot, error, bool) {
		switch i {
		case 0, 1, 2:
			return state([]string{"PENDING", "PENDING2", "SUCCEEDED"}[i], PhaseOpen), nil, false
		case 3:
			<-release
			return state("REFUNDED", PhaseFinal), nil, false
		}
		return Snapshot{}, nil, true
	})
	first := subscribe(t, h, key, f.fetch)
	var seen []Event
	for range 3 {
		ev, _ := next(t, first)
		seen = append(seen, ev)
	}
	ids := func(evs []Event) []uint64 {
		var out []uint64
		for _, ev := range evs {
			out = append(out, ev.ID)
		}
		return out
	}
	t.Run("ids are consecutive", func(t *testing.T) {
		if got := ids(seen); got[1] != got[0]+1 || got[2] != got[1]+1 {
			t.Fatalf("ids %v", got)
		}
	})
	resumed, err := h.SubscribeAfter(context.Background(), key, f.fetch, seen[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("the missed transitions first, in order", func(t *testing.T) {
		a, _ := next(t, resumed)
		b, _ := next(t, resumed)
		if fingerprints([]Event{a, b}) != "PENDING2,SUCCEEDED" || a.ID != seen[1].ID || b.ID != seen[2].ID {
			t.Fatalf("resumed with %+v, %+v", a, b)
		}
	})
	t.Run("then the live ones, to the end", func(t *testing.T) {
		close(release)
		for _, s := range []*Subscription{first, resumed} {
			evs := drain(t, s)
			if fingerprints(evs) != "REFUNDED" || evs[0].ID != seen[2].ID+1 || s.Err() != nil {
				t.Fatalf("got %s ids %v err %v", fingerprints(evs), ids(evs), s.Err())
			}
		}
	})
	waitStats(t, h, Stats{})
	t.Run("after the poller stopped, from the kept transitions, without a fetch", func(t *testing.T) {
		calls := f.served.Load()
		s, err := h.SubscribeAfter(context.Background(), key, f.fetch, seen[1].ID)
		if err != nil {
			t.Fatal(err)
		}
		if got := fingerprints(drain(t, s)); got != "SUCCEEDED,REFUNDED" {
			t.Errorf("got %s", got)
		}
		if f.served.Load() != calls {
			t.Errorf("%d fetches for a kept final state", f.served.Load()-calls)
		}
	})
	for _, tt := range []struct {
		name  string
		after uint64
	}{
		{"an id before the kept ones", seen[0].ID - 2},
		{"an id never given", seen[2].ID + 5},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := h.SubscribeAfter(context.Background(), key, f.fetch, tt.after); !errors.Is(err, ErrResumeExpired) {
				t.Errorf("err %v, want ErrResumeExpired", err)
			}
		})
	}
	t.Run("past the window", func(t *testing.T) {
		waitStats(t, h, Stats{}) // the last poller stopped: its transitions are kept in h.hist
		kept := func() int {
			h.mu.Lock()
			defer h.mu.Unlock()
			return h.hist.Len()
		}
		for deadline := time.Now().Add(10 * time.Second); kept() > 0; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the kept transitions outlived the window")
			}
		}
		if _, err := h.SubscribeAfter(context.Background(), key, f.fetch, seen[1].ID); !errors.Is(err, ErrResumeExpired) {
			t.Errorf("err %v, want ErrResumeExpired", err)
		}
	})
}

// TestMaxHistories: past MaxHistories kept resources, the one kept first
// is forgotten; the others still resume without a fetch.
func TestMaxHistories(t *testing.T) {
	t.Parallel()
	h, _ := newTestHub(t, Config{MaxHistories: 2})
	keys := []Key{{"m", "payment", "p1"}, {"m", "payment", "p2"}, {"m", "payment", "p3"}}
	final := newScript(states(PhaseFinal, "SUCCEEDED"))
	ids := map[Key]uint64{}
	for _, k := range keys {
		evs := drain(t, subscribe(t, h, k, newScript(states(PhaseFinal, "SUCCEEDED")).fetch))
		ids[k] = evs[0].ID
		waitStats(t, h, Stats{})
	}
	if _, err := h.SubscribeAfter(context.Background(), keys[0], final.fetch, ids[keys[0]]-1); !errors.Is(err, ErrResumeExpired) {
		t.Errorf("the first kept: err %v, want ErrResumeExpired", err)
	}
	for _, k := range keys[1:] {
		s, err := h.SubscribeAfter(context.Background(), k, final.fetch, ids[k]-1)
		if err != nil {
			t.Fatalf("%s: %v", k.ID, err)
		}
		if got := fingerprints(drain(t, s)); got != "SUCCEEDED" {
			t.Errorf("%s: got %s", k.ID, got)
		}
	}
	if n := final.served.Load(); n != 0 {
		t.Errorf("%d fetches for kept final states", n)
	}
}
