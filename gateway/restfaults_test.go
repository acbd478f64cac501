package gateway

// REST answers out of step with their connection, through the transport
// and the REST client as the gateway wires them: many credential pairs
// asking for the same payment at once, each answered with a record that
// names its pair, never gets another pair's.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"paygraph/internal/testenv"
	"paygraph/restclient"
	"paygraph/sandbox"
)

// faultyREST answers every GET with record(key), the record for the
// call's x-api-key, written by frame (which may double it, run it past
// its Content-Length or cut it); it returns the base URL.
func faultyREST(t *testing.T, record func(key string) []byte, frame func(c net.Conn, answer []byte, body int)) string {
	t.Helper()
	return testenv.RawHTTP(t, func(c net.Conn, req *http.Request) bool {
		body := record(req.Header.Get(restclient.HeaderAPIKey))
		frame(c, fmt.Appendf(nil, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body), len(body))
		return true
	})
}

// faultClient is the REST client as the gateway wires it to base, on
// fasthttp or, netHTTP, on the net/http pools the gateway uses behind an
// HTTP proxy (without the proxy).
func faultClient(t *testing.T, base string, timeout time.Duration, netHTTP bool) *restclient.Client {
	t.Helper()
	cfg := Config{RESTMaxInFlight: 256, RESTMaxInFlightPerMerchant: 64, RESTTimeout: timeout}
	rt := newTransport(cfg)
	if netHTTP {
		rt.newPool = httpPools(cfg, cfg.RESTMaxInFlightPerMerchant, nil)
	}
	t.Cleanup(rt.CloseIdleConnections)
	rc, err := restclient.New(restclient.Config{BaseURL: base, HTTPClient: &http.Client{Transport: rt}, DropIdle: rt.DropIdle, Timeout: timeout,
		Resilience: restclient.Resilience{MaxRetries: 2, RetryBaseDelay: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	return rc
}

// TestRESTFaultsNeverCrossPairs: 12 pairs, 4 callers each, ask for the
// same payment at once from a REST API that answers each pair with its
// own record, right, doubled, run past its Content-Length, or cut short
// (connection kept open), on each transport: no pair ever gets the
// record of another, whether its callers share a call in flight or not;
// a short body is KindUpstream (UPSTREAM_ERROR) once REST_TIMEOUT cuts
// it.
func TestRESTFaultsNeverCrossPairs(t *testing.T) {
	t.Parallel()
	sb := sandbox.New(sandbox.Options{})
	biz := sb.Businesses()[0]
	id := sb.Payments(biz.APIKey)[0].ID
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/api/v1/payments/"+id, nil)
	req.Header.Set(restclient.HeaderAPIKey, biz.APIKey)
	req.Header.Set(restclient.HeaderAPISecret, biz.APISecret)
	sb.ServeHTTP(rec, req)
	template := rec.Body.String()
	var name string
	for _, p := range sb.Payments(biz.APIKey) {
		if p.ID == id {
			name = p.Customer.Name
		}
	}
	if rec.Code != http.StatusOK || name == "" || !strings.Contains(template, strconv.Quote(name)) {
		t.Fatalf("sandbox record %d %q (customer %q)", rec.Code, template, name)
	}
	// The record for a pair names its key as the customer.
	record := func(key string) []byte {
		return []byte(strings.Replace(template, strconv.Quote(name), strconv.Quote(key), 1))
	}
	apart := func(c net.Conn, first, rest []byte) {
		if _, err := c.Write(first); err == nil {
			time.Sleep(time.Millisecond)
			_, _ = c.Write(rest)
		}
	}
	for _, tc := range []struct {
		name  string
		frame func(c net.Conn, answer []byte, body int)
		short bool
	}{
		{"answers right", func(c net.Conn, a []byte, _ int) { _, _ = c.Write(a) }, false},
		{"answers doubled", func(c net.Conn, a []byte, _ int) { apart(c, a, a) }, false},
		{"body longer than its Content-Length", func(c net.Conn, a []byte, _ int) { apart(c, a, append([]byte("\r\n"), a...)) }, false},
		{"body shorter than its Content-Length", func(c net.Conn, a []byte, body int) { _, _ = c.Write(a[:len(a)-body/2]) }, true},
	} {
		for _, transport := range []string{"fasthttp", "net/http"} {
			t.Run(tc.name+" on "+transport, func(t *testing.T) {
				t.Parallel()
				timeout := 2 * time.Second
				if tc.short {
					timeout = 200 * time.Millisecond
				}
				rc := faultClient(t, faultyREST(t, record, tc.frame), timeout, transport == "net/http")
				var answered, crossed, upstream, other, shared atomic.Int64
				var firstOther atomic.Value
				var wg sync.WaitGroup
				rounds := 10
				if tc.short {
					rounds = 1
				}
				for pair := range 12 {
					key := "ak_test_pair" + strconv.Itoa(pair)
					ctx := restclient.WithCredentials(context.Background(), restclient.Credentials{APIKey: key, APISecret: "sk_test_secret" + strconv.Itoa(pair)})
					for range 4 {
						wg.Go(func() {
							for range rounds {
								log := new(restclient.CallLog)
								p, err := rc.GetPayment(restclient.WithCallLog(ctx, log), id)
								shared.Add(int64(log.Shared()))
								var e *restclient.Error
								switch {
								case err == nil:
									answered.Add(1)
									if p.Customer.Name == nil || *p.Customer.Name != key {
										crossed.Add(1)
									}
								case errors.As(err, &e) && e.Kind == restclient.KindUpstream:
									upstream.Add(1)
								default:
									other.Add(1)
									firstOther.CompareAndSwap(nil, err.Error())
								}
							}
						})
					}
				}
				wg.Wait()
				t.Logf("%d answered (%d another pair's), %d upstream errors, %d others; %d shared a call in flight", answered.Load(), crossed.Load(), upstream.Load(), other.Load(), shared.Load())
				if crossed.Load() != 0 {
					t.Errorf("%d answers were another pair's record, want 0", crossed.Load())
				}
				if other.Load() != 0 {
					t.Errorf("%d errors neither answers nor upstream errors; first: %v", other.Load(), firstOther.Load())
				}
				if tc.short && answered.Load() != 0 {
					t.Errorf("%d short bodies answered, want 0 (all upstream errors)", answered.Load())
				}
			})
		}
	}
}

// TestRESTPoolsBounded: 20 pairs, one after another, through pools bounded
// at 4: at most 4 pools are kept and at most 4 connections stay open (the
// least recently used pools' idle connections closed, the dropped pools'
// too), and DropIdle closes one pair's idle connections only.
func TestRESTPoolsBounded(t *testing.T) {
	t.Parallel()
	sb := sandbox.New(sandbox.Options{})
	biz := sb.Businesses()[0]
	id := sb.Payments(biz.APIKey)[0].ID
	srv := httptest.NewServer(sb)
	t.Cleanup(srv.Close)
	rt := newTransport(Config{RESTMaxInFlight: 4, RESTMaxInFlightPerMerchant: 2, RESTTimeout: time.Second})
	t.Cleanup(rt.CloseIdleConnections)
	rc, err := restclient.New(restclient.Config{BaseURL: srv.URL, HTTPClient: &http.Client{Transport: rt}, DropIdle: rt.DropIdle})
	if err != nil {
		t.Fatal(err)
	}
	ctxOf := func(i int) context.Context {
		return restclient.WithCredentials(context.Background(), restclient.Credentials{APIKey: biz.APIKey, APISecret: biz.APISecret + strconv.Itoa(i)})
	}
	for i := range 20 {
		_, _ = rc.GetPayment(ctxOf(i), id) // 401 for all but none: the pools are what is counted
		rt.mu.Lock()
		pools := rt.pools.Len()
		rt.mu.Unlock()
		if open := rt.open.Load(); pools > 4 || open > 4 {
			t.Fatalf("after %d pairs: %d pools, %d connections open; want at most 4 of each", i+1, pools, open)
		}
	}
	open := rt.open.Load()
	rt.DropIdle(ctxOf(19))
	if got := rt.open.Load(); got != open-1 {
		t.Errorf("DropIdle of one pair: %d connections open, want %d (that pair's one closed, the others kept)", got, open-1)
	}

	// Concurrent calls: one pair's 4 connections, idle, make room for
	// another pair's 2 (a dial past the bound closes the least recently
	// used pools' idle connections).
	together := NewOverlap(1)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		together.Hold()
		sb.ServeHTTP(w, r)
	}))
	t.Cleanup(slow.Close)
	rt = newTransport(Config{RESTMaxInFlight: 4, RESTMaxInFlightPerMerchant: 4, RESTTimeout: time.Second})
	t.Cleanup(rt.CloseIdleConnections)
	rc, err = restclient.New(restclient.Config{BaseURL: slow.URL, HTTPClient: &http.Client{Transport: rt}, DropIdle: rt.DropIdle,
		Limiter: restclient.NewLimiter(restclient.LimiterConfig{MaxInFlight: 8, MaxInFlightPerMerchant: 4})})
	if err != nil {
		t.Fatal(err)
	}
	for _, pair := range []struct{ i, calls int }{{100, 4}, {101, 2}} {
		var wg sync.WaitGroup
		together.SetN(pair.calls) // the pair's calls are in flight at once
		for range pair.calls {
			wg.Go(func() { _, _ = rc.GetPayment(ctxOf(pair.i), id) })
		}
		wg.Wait()
		if open := rt.open.Load(); open > 4 {
			t.Errorf("after pair %d's %d calls at once: %d connections open, want at most 4", pair.i, pair.calls, open)
		}
	}
}
