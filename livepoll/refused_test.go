package livepoll

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// unreadable is a Store that holds a later entry than every transition,
// which it never returns (one this replica cannot read): every Append is
// refused, every Since is empty.
type unreadable struct{}

func (unreadable) Lease(context.Context, Key, time.Duration, time.Duration) (bool, error) {
	return true, nil
}
func (unreadable) Release(context.Context, Key) {}
func (unreadable) Append(context.Context, Key, Record, uint64, time.Duration) (uint64, error) {
	return 1 << 60, nil
}
func (unreadable) Since(context.Context, Key, uint64) ([]Record, error) { return nil, nil }

// TestRefusedByWhatCannotBeRead: a Store that refuses every append for a
// later transition it never hands over does not stop the replica's
// subscribers from getting each transition, nor make the poller fetch at
// every tick: one fetch per interval.
func TestRefusedByWhatCannotBeRead(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const interval = time.Second
		h, err := New(Config{Interval: interval, MaxInterval: interval, Store: unreadable{}, Decode: decodeString})
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		res := &resource{state: "PENDING"}
		s, err := h.Subscribe(context.Background(), Key{Merchant: "m", Kind: "payment", ID: "p"}, res.fetch)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		var got []string
		for _, st := range []string{"PENDING", "SUCCEEDED", "REFUNDED"} {
			res.set(st)
			ev, ok := <-s.Events()
			if !ok {
				t.Fatalf("the subscription ended before %s (%v), after %v", st, s.Err(), got)
			}
			got = append(got, ev.Snapshot.Fingerprint)
			if st == "SUCCEEDED" {
				before := res.calls.Load()
				time.Sleep(10 * interval)
				if polls := res.calls.Load() - before; polls > 12 {
					t.Errorf("%d fetches in 10 intervals: a fetch every tick", polls)
				}
			}
		}
		if want := "PENDING,SUCCEEDED,REFUNDED"; fingerprintsOf(got) != want {
			t.Errorf("got %s, want %s", fingerprintsOf(got), want)
		}
	})
}

func fingerprintsOf(fps []string) string {
	out := ""
	for i, f := range fps {
		if i > 0 {
			out += ","
		}
		out += f
	}
	return out
}
