package loaders

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/graph-gophers/dataloader/v7"

	"paygraph/restclient"
)

// stackREST answers every detail with a record of the asked id and
// remembers, for each call, whether it ran inside the dataloader's batch
// (its goroutine's stack names it).
type stackREST struct {
	countingREST
	mu      sync.Mutex
	batched []bool
	panics  bool
}

func (s *stackREST) record() {
	buf := make([]byte, 64<<10)
	buf = buf[:runtime.Stack(buf, false)]
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	s.batched = append(s.batched, strings.Contains(string(buf), "dataloader"))
	if s.panics {
		panic("fetch panics")
	}
}

func (s *stackREST) GetPayment(_ context.Context, id string) (*restclient.Payment, error) {
	s.record()
	return &restclient.Payment{ID: id}, nil
}

func (s *stackREST) GetPaymentLink(_ context.Context, id string) (*restclient.PaymentLink, error) {
	s.record()
	return &restclient.PaymentLink{ID: id}, nil
}

// TestLoadAlone: the load of an operation that Alone named runs without
// the dataloader (on the caller's goroutine) and counts as a batch of one;
// a later load of the same key shares it (one REST call, as the
// dataloader's cache would give), any other load, and every load of
// another operation, goes through the dataloader.
func TestLoadAlone(t *testing.T) {
	t.Parallel()
	type load struct {
		op   int // 0: the operation Alone named; 1: another
		link bool
		id   string
	}
	for _, tc := range []struct {
		name        string
		alone       bool
		loads       []load
		wantBatched []bool // per REST call, in order
	}{
		{"the named operation's load", true, []load{{0, false, "pay_1"}}, []bool{false}},
		{"the same key again shares it", true, []load{{0, false, "pay_1"}, {0, false, "pay_1"}}, []bool{false}},
		{"another key uses the loader", true, []load{{0, false, "pay_1"}, {0, false, "pay_2"}}, []bool{false, true}},
		{"another operation uses the loader", true, []load{{1, false, "pay_1"}}, []bool{true}},
		{"another operation shares the alone result", true, []load{{0, false, "pay_1"}, {1, false, "pay_1"}}, []bool{false}},
		{"no operation named", false, []load{{0, false, "pay_1"}}, []bool{true}},
		{"a link", true, []load{{0, true, "pl_1"}, {0, true, "pl_1"}}, []bool{false}},
		{"a payment then a link", true, []load{{0, false, "pay_1"}, {0, true, "pl_1"}}, []bool{false, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rest := &stackREST{}
			var batches []int
			l := New(rest, &FetchLimits{OnBatch: func(_ string, n int) { batches = append(batches, n) }})
			ops := [2]*graphql.OperationContext{{}, {}}
			if tc.alone {
				l.Alone(ops[0])
			}
			for _, ld := range tc.loads {
				ctx := graphql.WithOperationContext(With(context.Background(), l), ops[ld.op])
				var got string
				var err error
				if ld.link {
					var pl *restclient.PaymentLink
					pl, err = l.PaymentLinkThunk(ctx, ld.id)()
					if pl != nil {
						got = pl.ID
					}
				} else {
					var p *restclient.Payment
					p, err = l.PaymentThunk(ctx, ld.id)()
					if p != nil {
						got = p.ID
					}
				}
				if err != nil || got != ld.id {
					t.Fatalf("load %s: %q, %v", ld.id, got, err)
				}
			}
			if strings.Join(boolStrings(rest.batched), ",") != strings.Join(boolStrings(tc.wantBatched), ",") {
				t.Errorf("REST calls inside the dataloader: %v, want %v", rest.batched, tc.wantBatched)
			}
			if len(batches) != len(tc.wantBatched) {
				t.Errorf("batches reported: %v, want %d of one", batches, len(tc.wantBatched))
			}
		})
	}
}

// TestLoadAlonePanics: a fetch that panics on the alone path answers an
// error, as inside a batch, and a later load of the key shares it.
func TestLoadAlonePanics(t *testing.T) {
	t.Parallel()
	rest := &stackREST{panics: true}
	l := New(rest, nil)
	op := &graphql.OperationContext{}
	l.Alone(op)
	ctx := graphql.WithOperationContext(With(context.Background(), l), op)
	for range 2 {
		if _, err := l.PaymentThunk(ctx, "pay_1")(); !errors.Is(err, ErrPanic) {
			t.Fatalf("error %v, want ErrPanic", err)
		}
	}
	if rest.calls != 1 || rest.batched[0] {
		t.Errorf("%d REST calls, inside the dataloader %v: want one, outside", rest.calls, rest.batched)
	}
}

func boolStrings(bs []bool) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		if b {
			out[i] = "batched"
		} else {
			out[i] = "alone"
		}
	}
	return out
}

// TestRepeatedKeysShareTheDataloadersThunk: identical keys of one
// request are answered by one REST call (the first key's thunk, kept by
// the loaders in front of the dataloader's cache); a load whose batch
// panicked is forgotten as the dataloader forgets it, so the next load
// of that key calls the REST API again.
func TestRepeatedKeysShareTheDataloadersThunk(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		panicOnce bool
		wantCalls int
	}{
		{"repeated key", false, 1},
		{"after a panicked batch", true, 1}, // the panicked batch made none
	} {
		t.Run(tc.name, func(t *testing.T) {
			rest := &stackREST{}
			panicked := false
			l := New(rest, &FetchLimits{OnBatch: func(string, int) {
				if tc.panicOnce && !panicked {
					panicked = true
					panic("batch panics")
				}
			}})
			ctx := With(context.Background(), l)
			first, firstErr := l.PaymentThunk(ctx, "pay_1")()
			if tc.panicOnce {
				var pe *dataloader.PanicErrorWrapper
				if !errors.As(firstErr, &pe) {
					t.Fatalf("first load: %v, want the dataloader's panic error", firstErr)
				}
			} else if firstErr != nil || first.ID != "pay_1" {
				t.Fatalf("first load: %v, %v", first, firstErr)
			}
			for range 3 {
				p, err := l.PaymentThunk(ctx, "pay_1")()
				if err != nil || p.ID != "pay_1" {
					t.Fatalf("later load: %v, %v", p, err)
				}
			}
			if rest.calls != tc.wantCalls {
				t.Errorf("%d REST calls, want %d", rest.calls, tc.wantCalls)
			}
		})
	}
}

// countingREST counts the calls it gets and answers each with a payment
// (or an empty page).
type countingREST struct{ calls int }

func (c *countingREST) ListPayments(context.Context, restclient.ListParams) (*restclient.PaymentPage, error) {
	c.calls++
	return &restclient.PaymentPage{}, nil
}
func (c *countingREST) GetPayment(_ context.Context, id string) (*restclient.Payment, error) {
	c.calls++
	return &restclient.Payment{ID: id}, nil
}
func (c *countingREST) GetPaymentLink(_ context.Context, id string) (*restclient.PaymentLink, error) {
	c.calls++
	return &restclient.PaymentLink{ID: id}, nil
}
func (c *countingREST) GetCheckoutSession(_ context.Context, id string) (*restclient.CheckoutSession, error) {
	c.calls++
	return &restclient.CheckoutSession{ID: id}, nil
}
