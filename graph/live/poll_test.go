package live

// A subscription's poll against a busy REST client: its wait
// for a REST slot ends within REST_TIMEOUT (Config.PollTimeout),
// and a pair the REST API has not accepted subscribes provisionally.

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"paygraph/graph/model"
	"paygraph/livepoll"
	"paygraph/restclient"
	"paygraph/sessiontoken"
)

func TestSubscriptionPollBounds(t *testing.T) {
	full := Subscriber{Level: sessiontoken.CustomerDataFull}
	var calls atomic.Int64
	rest := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"error":{"code":"UNAUTHENTICATED","message":"invalid credentials"}}`))
	})
	newClient := func(t *testing.T) *restclient.Client {
		rc, err := restclient.New(restclient.Config{BaseURL: "http://rest.invalid", HTTPClient: &http.Client{Transport: inProcess{rest}},
			Timeout: 100 * time.Millisecond,
			Limiter: restclient.NewLimiter(restclient.LimiterConfig{MaxInFlight: 1})})
		if err != nil {
			t.Fatal(err)
		}
		return rc
	}
	pair := func(k string) context.Context {
		return restclient.WithCredentials(context.Background(), restclient.Credentials{APIKey: "pk_" + k, APISecret: "sk_" + k})
	}
	fetch := func(ctx context.Context, rest REST) (livepoll.Snapshot, error) {
		_, err := rest.GetPayment(ctx, "pay_1")
		return livepoll.Snapshot{}, err
	}

	// pollOnce subscribes while another pair holds the process's only REST
	// slot, and returns how long the first poll took to end on the
	// bubble's clock (0: not within wait).
	pollOnce := func(t *testing.T, pollTimeout, wait time.Duration) time.Duration {
		rc := newClient(t)
		held, err := rc.Hold(pair("holder"))
		if err != nil {
			t.Fatal(err)
		}
		defer held.Release()
		polled := make(chan struct{}, 1)
		hub, err := livepoll.New(livepoll.Config{Interval: time.Hour, OnPoll: func(string, livepoll.Outcome) {
			select {
			case polled <- struct{}{}:
			default:
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
		defer hub.Close()
		ctx, cancel := context.WithCancel(pair("poller"))
		defer cancel()
		start := time.Now()
		if _, err := subscribe[*model.Payment](ctx, Config{Hub: hub, REST: rc, PollTimeout: pollTimeout}, full,
			KindPayment, "pay_1", 0, restclient.EndpointGetPayment, 1, fetch); err != nil {
			t.Fatal(err)
		}
		select {
		case <-polled:
			return time.Since(start)
		case <-time.After(wait):
			return 0
		}
	}

	t.Run("a poll's wait for a slot ends within REST_TIMEOUT", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			calls.Store(0)
			if before := pollOnce(t, 0, time.Second); before != 0 {
				t.Fatalf("without PollTimeout the poll ended after %s: the slot was not held", before)
			}
			if now := pollOnce(t, 100*time.Millisecond, 10*time.Second); now == 0 || now > 100*time.Millisecond {
				t.Fatalf("with REST_TIMEOUT 100ms the poll ended after %s (0: still waiting after 10s)", now)
			}
			if n := calls.Load(); n != 0 {
				t.Fatalf("%d REST calls while the slot was held, want none", n)
			}
			// No goroutine of the polls may be left: synctest.Test fails
			// when the bubble's goroutines are blocked at its end (the
			// process's count, runtime.NumGoroutine, also holds other
			// tests' goroutines and flaked).
		})
	})

	t.Run("an unaccepted pair is provisional and never counted when refused", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			hub, err := livepoll.New(livepoll.Config{Interval: time.Hour, MaxSubscriptions: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer hub.Close()
			live := Config{Hub: hub, REST: newClient(t), PollTimeout: 100 * time.Millisecond,
				Accepted: func(context.Context) bool { return false }}
			ctx, cancel := context.WithCancel(pair("invented"))
			defer cancel()
			for range 5 {
				ch, err := subscribe[*model.Payment](ctx, live, full, KindPayment, "pay_1", 0, restclient.EndpointGetPayment, 1, fetch)
				if err != nil {
					t.Fatalf("refused at admission: %v", err)
				}
				if st := hub.Stats(); st.Subscriptions != 0 {
					t.Fatalf("%+v: an unaccepted pair counted before its first poll", st)
				}
				for range ch { // the 401 ends it
				}
			}
			if st := hub.Stats(); st.Subscriptions != 0 || st.Pending != 0 {
				t.Fatalf("%+v after the refusals, want nothing live", st)
			}
		})
	})
}

// inProcess serves the REST client's requests from a handler, inside the
// test's synctest bubble.
type inProcess struct{ h http.Handler }

func (t inProcess) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}
