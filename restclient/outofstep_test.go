package restclient

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// dropSpy is a Config.DropIdle that counts its calls and the merchant
// identities they were for.
type dropSpy struct {
	mu    sync.Mutex
	pairs []string
}

func (d *dropSpy) drop(ctx context.Context) {
	m, _ := MerchantOf(ctx)
	d.mu.Lock()
	d.pairs = append(d.pairs, m)
	d.mu.Unlock()
}

func (d *dropSpy) calls() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.pairs...)
}

// TestOutOfStepAnswersDropTheirPairsConnections: the second wall. An
// answer that is not for the call (a record with another id, a session
// with neither the id nor the reference asked for, a page whose
// next_cursor is the cursor just sent, or with more payments than the
// limit sent) is UPSTREAM_ERROR, and the idle
// connections of the call's pair are dropped (its connection may be
// answering an earlier call); a right answer drops nothing.
func TestOutOfStepAnswersDropTheirPairsConnections(t *testing.T) {
	t.Parallel()
	stuckPage := strings.Replace(listBody, `"next_cursor": "cur_2"`, `"next_cursor": "cur_1"`, 1)
	for _, tc := range []struct {
		name, body string
		call       func(ctx context.Context, c *Client) error
		outOfStep  bool
	}{
		{"payment with another id", paymentBody, func(ctx context.Context, c *Client) error {
			_, err := c.GetPayment(ctx, "pay_prod_other")
			return err
		}, true},
		{"the payment asked for", paymentBody, func(ctx context.Context, c *Client) error {
			_, err := c.GetPayment(ctx, "pay_prod_0123456789abcdef0123456789abcdef")
			return err
		}, false},
		{"payment link with another id", linkFullBody, func(ctx context.Context, c *Client) error {
			_, err := c.GetPaymentLink(ctx, "pl_other")
			return err
		}, true},
		{"session with neither the id nor the reference", sessionBody, func(ctx context.Context, c *Client) error {
			_, err := c.GetCheckoutSession(ctx, "REF_OTHER")
			return err
		}, true},
		{"session by its reference", sessionBody, func(ctx context.Context, c *Client) error {
			_, err := c.GetCheckoutSession(ctx, "REF12345")
			return err
		}, false},
		{"page that does not follow its cursor", stuckPage, func(ctx context.Context, c *Client) error {
			_, err := c.ListPayments(ctx, ListParams{Cursor: "cur_1"})
			return err
		}, true},
		{"page with more payments than the limit", listBody, func(ctx context.Context, c *Client) error {
			_, err := c.ListPayments(ctx, ListParams{Limit: 1})
			return err
		}, true},
		{"page within the limit", listBody, func(ctx context.Context, c *Client) error {
			_, err := c.ListPayments(ctx, ListParams{Limit: 2})
			return err
		}, false},
		{"page that follows its cursor", listBody, func(ctx context.Context, c *Client) error {
			_, err := c.ListPayments(ctx, ListParams{Cursor: "cur_1"})
			return err
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var spy dropSpy
			c := newClient(t, Config{BaseURL: jsonServer(t, http.StatusOK, tc.body).URL, DropIdle: spy.drop})
			ctx := credCtx()
			err := tc.call(ctx, c)
			want, _ := MerchantOf(ctx)
			switch got := spy.calls(); {
			case !tc.outOfStep && (err != nil || len(got) != 0):
				t.Errorf("err %v, %d drops; want an answer and none", err, len(got))
			case tc.outOfStep && KindOf(err) != KindUpstream:
				t.Errorf("err %v, want an upstream error", err)
			case tc.outOfStep && (len(got) != 1 || got[0] != want):
				t.Errorf("drops for %q, want one for the call's pair %q", got, want)
			}
		})
	}
}

// shortREST answers every request with a Content-Length of 100 and 10
// bytes of body, then keeps the connection open until the test ends.
func shortREST(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					if _, err := http.ReadRequest(br); err != nil {
						return
					}
					calls.Add(1)
					fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"data\":[")
					<-done
				}
			})
		}
	})
	t.Cleanup(func() { close(done); ln.Close(); wg.Wait() })
	return "http://" + ln.Addr().String(), &calls
}

// TestShortBodyIsUpstreamError: a body that stops short of its
// Content-Length on a connection kept open, cut by the call's timeout,
// is KindUpstream (UPSTREAM_ERROR: the REST API answered, badly), never
// an answer nor a timeout, and is not retried; many pairs asking the same
// page at once all get it.
func TestShortBodyIsUpstreamError(t *testing.T) {
	t.Parallel()
	base, calls := shortREST(t)
	c := newClient(t, Config{BaseURL: base, Timeout: 100 * time.Millisecond, Resilience: Resilience{MaxRetries: 2, RetryBaseDelay: time.Millisecond}})
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		ctx := WithCredentials(context.Background(), Credentials{APIKey: fmt.Sprintf("ak_test_%d", i), APISecret: fmt.Sprintf("sk_test_%d", i)})
		wg.Go(func() { _, errs[i] = c.ListPayments(ctx, ListParams{Limit: 10}) })
	}
	wg.Wait()
	for i, err := range errs {
		var e *Error
		if !errors.As(err, &e) || e.Kind != KindUpstream || !strings.Contains(e.Message, "stopped short (9 of its 100 bytes)") {
			t.Errorf("pair %d: %v, want an upstream error of a body that stopped short", i, err)
		}
	}
	if n := calls.Load(); n != int64(len(errs)) {
		t.Errorf("%d calls, want %d (none retried)", n, len(errs))
	}
}

// TestRetryAfterConnectionErrorDials: before a call is retried after a
// connection error, the idle connections of its pair are dropped (the
// REST API may have restarted: the pooled ones are dead too); a 503's
// retry drops none.
func TestRetryAfterConnectionErrorDials(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		fail  func(w http.ResponseWriter)
		drops int
	}{
		{"connection closed", func(w http.ResponseWriter) {
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				conn.Close()
			}
		}, 1},
		{"503", func(w http.ResponseWriter) { w.WriteHeader(http.StatusServiceUnavailable) }, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var n atomic.Int64
			srv := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
				if n.Add(1) == 1 {
					tc.fail(w)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(paymentBody))
			})
			var spy dropSpy
			c := newClient(t, Config{BaseURL: srv.URL, DropIdle: spy.drop, Resilience: Resilience{MaxRetries: 1, RetryBaseDelay: time.Millisecond}})
			if _, err := c.GetPayment(credCtx(), "pay_prod_0123456789abcdef0123456789abcdef"); err != nil {
				t.Fatal(err)
			}
			if got := len(spy.calls()); got != tc.drops {
				t.Errorf("%d drops, want %d", got, tc.drops)
			}
		})
	}
}
