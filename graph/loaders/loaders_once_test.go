package loaders

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/99designs/gqlgen/graphql"
	"github.com/graph-gophers/dataloader/v7"

	"paygraph/restclient"
)

// onceREST counts the detail calls of each payment id; when armed, its
// first detail call holds (started closed) until release is closed.
type onceREST struct {
	countingREST
	armed   atomic.Bool
	started chan struct{}
	release chan struct{}
	mu      sync.Mutex
	details map[string]int
}

func (o *onceREST) GetPayment(_ context.Context, id string) (*restclient.Payment, error) {
	o.mu.Lock()
	o.details[id]++
	o.mu.Unlock()
	if o.armed.CompareAndSwap(true, false) {
		close(o.started)
		<-o.release
	}
	return &restclient.Payment{ID: id}, nil
}

// holdingTracer holds the first dataloader Load it sees, when armed, at
// its start (inside Load: after the loaders looked the key up, before
// Load returns its thunk), closing started, until release is closed: the
// asker's goroutine descheduled at the worst moment.
type holdingTracer struct {
	dataloader.NoopTracer[string, *restclient.Payment]
	armed   atomic.Bool
	started chan struct{}
	release chan struct{}
}

func (h *holdingTracer) TraceLoad(ctx context.Context, key string) (context.Context, dataloader.TraceLoadFinishFunc[*restclient.Payment]) {
	if h.armed.CompareAndSwap(true, false) {
		close(h.started)
		<-h.release
	}
	return h.NoopTracer.TraceLoad(ctx, key)
}

// TestOneFetchPerRecordWhateverAsks: the dataloader's loads, the alone
// load (Alone) and the list join (joinPayments) of one operation share
// one REST call for a record, whichever asks first and wherever the
// first asker is held when the second asks: at the start of the
// dataloader's Load (looked up, not yet recorded) or in its REST call.
// The second asker asks only once the first is held, and the first goes
// on only once the second has fetched or waits (synctest.Wait), so every
// case runs its interleaving every time.
func TestOneFetchPerRecordWhateverAsks(t *testing.T) {
	t.Parallel()
	const id, other = "pay_1", "pay_2"
	type asker int
	const (
		load  asker = iota // PaymentThunk in an operation not named Alone
		alone              // PaymentThunk in the operation named Alone
		join               // the list join, of id and another item
	)
	type hold int
	const (
		inLoad hold = iota // the first asker held inside the dataloader's Load
		inREST             // the first asker held in its REST call
	)
	for _, tc := range []struct {
		name          string
		first, second asker
		hold          hold
	}{
		{"a load inside Load, then the join", load, join, inLoad},
		{"a load in its REST call, then the join", load, join, inREST},
		{"the join in its REST call, then a load", join, load, inREST},
		{"a load inside Load, then the alone load", load, alone, inLoad},
		{"a load inside Load, then another load", load, load, inLoad},
		{"the alone load in its REST call, then the join", alone, join, inREST},
		{"the join in its REST call, then the alone load", join, alone, inREST},
		{"the alone load in its REST call, then a load", alone, load, inREST},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				started, release := make(chan struct{}), make(chan struct{})
				rest := &onceREST{details: map[string]int{}, started: started, release: release}
				tracer := &holdingTracer{started: started, release: release}
				limits := &FetchLimits{}
				limits.opts.once.Do(func() {
					limits.opts.payments = append(optionsFor[*restclient.Payment](0), dataloader.WithTracer[string, *restclient.Payment](tracer))
					limits.opts.links = optionsFor[*restclient.PaymentLink](0)
					limits.opts.sessions = optionsFor[*restclient.CheckoutSession](0)
				})
				if tc.hold == inLoad {
					tracer.armed.Store(true)
				} else {
					rest.armed.Store(true)
				}
				l := New(rest, limits)
				ops := [2]*graphql.OperationContext{{}, {}} // alone's, the others'
				l.Alone(ops[0])
				// ask starts a's fetch of id and returns what waits for it.
				ask := func(a asker) func() error {
					ctx := graphql.WithOperationContext(With(context.Background(), l), ops[1])
					if a == join {
						for i, r := range l.JoinPayments(ctx, []string{id, other}, make([]*restclient.Payment, 2)) {
							if want := [2]string{id, other}[i]; r.Err != nil || r.Value == nil || r.Value.ID != want {
								t.Errorf("join: item %d %v, %v; want %s", i, r.Value, r.Err, want)
							}
						}
						return func() error { return nil }
					}
					if a == alone {
						ctx = graphql.WithOperationContext(ctx, ops[0])
					}
					th := l.PaymentThunk(ctx, id)
					return func() error {
						p, err := th()
						if err == nil && (p == nil || p.ID != id) {
							t.Errorf("load: %v, want %s", p, id)
						}
						return err
					}
				}
				var wg sync.WaitGroup
				wg.Go(func() {
					wait := ask(tc.first)
					// Not before release: the dataloader's thunk, awaited
					// by two, blocks the second on a mutex, which
					// synctest.Wait cannot tell from running.
					<-release
					if err := wait(); err != nil {
						t.Errorf("first asker: %v", err)
					}
				})
				<-started // the first asker is held
				wg.Go(func() {
					if err := ask(tc.second)(); err != nil {
						t.Errorf("second asker: %v", err)
					}
				})
				synctest.Wait() // the second has fetched, or waits for the first
				close(release)
				wg.Wait()
				rest.mu.Lock()
				defer rest.mu.Unlock()
				if n := rest.details[id]; n != 1 {
					t.Errorf("%s fetched %d times, want once", id, n)
				}
			})
		})
	}
}
