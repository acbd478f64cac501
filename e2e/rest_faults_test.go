package e2e

// REST answers out of step with their connection, and a REST API that
// restarts: the gateway process in front of REST stubs written byte by
// byte (a raw listener that frames the fake's answers itself, with
// faults), two merchants querying at once.

import (
	"bytes"
	"context"
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
)

// framing writes one answer (status, content type, body) to c, faulty
// or not; it returns false to hang up.
type framing func(c net.Conn, status int, body []byte) bool

func answerBytes(status int, body []byte, contentLength int) []byte {
	return fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		status, http.StatusText(status), contentLength, body)
}

// The faults of REST answers: each answer sent twice; a body that runs
// past its Content-Length by a whole second answer; a body cut at half
// its Content-Length on a connection kept open.
var (
	framingDoubled framing = func(c net.Conn, status int, body []byte) bool {
		a := answerBytes(status, body, len(body))
		return writeApart(c, a, a)
	}
	framingOverlong framing = func(c net.Conn, status int, body []byte) bool {
		a := answerBytes(status, body, len(body))
		return writeApart(c, a, append([]byte("\r\n"), a...))
	}
	framingShort framing = func(c net.Conn, status int, body []byte) bool {
		_, err := c.Write(answerBytes(status, body[:len(body)/2], len(body)))
		return err == nil // and the rest never comes: the connection stays open
	}
)

// writeApart writes first, then rest a moment later, so that a client
// reads first as the whole answer and finds rest on the connection
// afterwards (written at once, both would often be in one read).
func writeApart(c net.Conn, first, rest []byte) bool {
	if _, err := c.Write(first); err != nil {
		return false
	}
	time.Sleep(2 * time.Millisecond)
	_, err := c.Write(rest)
	return err == nil
}

// rawREST serves f's answers on a listener of its own, framed by frame;
// it returns the base URL.
func rawREST(t *testing.T, f *restFake, frame framing) string {
	t.Helper()
	return testenv.RawHTTP(t, func(c net.Conn, req *http.Request) bool {
		rec := httptest.NewRecorder()
		f.ServeHTTP(rec, req)
		return frame(c, rec.Code, rec.Body.Bytes())
	})
}

// merchantMarks are the strings only m's data holds: its payments' ids
// and its customers' emails.
func (f *restFake) merchantMarks(m *merchant) []string {
	var out []string
	for _, p := range f.sb.Payments(m.biz.APIKey) {
		out = append(out, p.ID)
		if p.Customer.Email != "" {
			out = append(out, p.Customer.Email)
		}
	}
	return out
}

func containsAny(b []byte, marks []string) string {
	for _, m := range marks {
		if bytes.Contains(b, []byte(m)) {
			return m
		}
	}
	return ""
}

// TestRESTFaultsKeepMerchantsApart: a REST API that doubles its answers
// or sends bodies past their Content-Length never makes one merchant's
// data answer the other's query, and a body shorter than its
// Content-Length is UPSTREAM_ERROR once REST_TIMEOUT cuts it, never a
// served answer. Neither merchant's customer data reaches the logs.
func TestRESTFaultsKeepMerchantsApart(t *testing.T) {
	t.Parallel()
	f := newRESTFake(t)
	marks := map[string][]string{"A": f.merchantMarks(&f.A), "B": f.merchantMarks(&f.B)}
	ids := map[string][]string{}
	for _, m := range []*merchant{&f.A, &f.B} {
		for _, p := range f.sb.Payments(m.biz.APIKey)[:4] {
			ids[m.Name] = append(ids[m.Name], p.ID)
		}
	}
	for _, tc := range []struct {
		name  string
		frame framing
		short bool // every answer is cut: each query must be UPSTREAM_ERROR
	}{
		{"answers_doubled", framingDoubled, false},
		{"body_longer_than_content_length", framingOverlong, false},
		{"body_shorter_than_content_length", framingShort, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := rawREST(t, f, tc.frame)
			timeout := "2s"
			if tc.short {
				timeout = "300ms"
			}
			p := startGateway(t, map[string]string{"REST_BASE_URL": base, "REST_TIMEOUT": timeout, "SANDBOX": "false",
				"RATE_LIMIT_REQUESTS_PER_SECOND": "0", "RATE_LIMIT_REST_CALLS_PER_SECOND": "0",
				// With short bodies no pair is ever accepted (no whole 2xx):
				// neither the budget of unaccepted pairs' calls (one address:
				// a quarter of it) nor the anonymous budgets (such a pair's)
				// may refuse them.
				"REST_UNACCEPTED_CALLS_PER_SECOND":            "4000",
				"RATE_LIMIT_ANONYMOUS_PER_ADDRESS_PER_SECOND": "0", "RATE_LIMIT_ANONYMOUS_PER_SECOND": "0"})
			var answers, crossed, served, upstream, other atomic.Int64
			var firstCross, firstOther atomic.Value
			var wg sync.WaitGroup
			rounds := 12
			if tc.short {
				rounds = 3
			}
			for _, m := range []*merchant{&f.A, &f.B} {
				otherName := map[string]string{"A": "B", "B": "A"}[m.Name]
				for w := range 3 {
					wg.Go(func() {
						for i := range rounds {
							q := gqlReq{Header: m.Header(), Query: `{ payments(first: 3) { nodes { id customer { name email phone } } } }`}
							if (i+w)%2 == 1 {
								q = gqlReq{Header: m.Header(), Query: `query($id: ID!) { payment(id: $id) { id customer { name email phone } } }`,
									Variables: map[string]any{"id": ids[m.Name][(i+w)%len(ids[m.Name])]}}
							}
							r := p.do(context.Background(), q)
							answers.Add(1)
							if leak := containsAny(r.Body, marks[otherName]); leak != "" {
								crossed.Add(1)
								firstCross.CompareAndSwap(nil, fmt.Sprintf("merchant %s's answer holds %s of merchant %s", m.Name, leak, otherName))
							}
							switch o := r.Outcome(); {
							case o == "ok" && len(r.Data) > 0 && !bytes.Equal(r.Data, []byte("null")):
								served.Add(1)
							case o == "UPSTREAM_ERROR":
								upstream.Add(1)
							default:
								other.Add(1)
								firstOther.CompareAndSwap(nil, o+": "+string(r.Body))
							}
						}
					})
				}
			}
			wg.Wait()
			t.Logf("%d answers: %d served, %d UPSTREAM_ERROR, %d other; %d carried the other merchant's data",
				answers.Load(), served.Load(), upstream.Load(), other.Load(), crossed.Load())
			if crossed.Load() != 0 {
				t.Errorf("%d answers carried the other merchant's data, want 0; first: %v", crossed.Load(), firstCross.Load())
			}
			if tc.short && upstream.Load() != answers.Load() {
				t.Errorf("short bodies: %d of %d answers UPSTREAM_ERROR, want all; first other: %v", upstream.Load(), answers.Load(), firstOther.Load())
			}
			if !tc.short && other.Load() != 0 {
				t.Errorf("%d answers neither served nor UPSTREAM_ERROR; first: %v", other.Load(), firstOther.Load())
			}
			out := p.Output()
			if leak := containsAny([]byte(out), append(marks["A"], marks["B"]...)); leak != "" {
				t.Errorf("customer data (%q) in the gateway's logs", leak)
			}
		})
	}
}

// restartable is a REST API on a fixed address that can be restarted:
// its server closed (every connection with it, answered or not) and a
// new one listening on the same address at once, as a REST deploy behind
// a stable address does.
type restartable struct {
	addr string
	h    http.Handler
	mu   sync.Mutex
	srv  *http.Server
	done chan struct{}
}

func startRestartable(t *testing.T, h http.Handler) *restartable {
	t.Helper()
	r := &restartable{h: h, addr: "127.0.0.1:" + strconv.Itoa(freePort(t))}
	r.start(t)
	t.Cleanup(func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.srv.Close()
		<-r.done
	})
	return r
}

func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func (r *restartable) start(t *testing.T) {
	var ln net.Listener
	var err error
	for range 100 { // the old socket's port may take a moment to free
		if ln, err = net.Listen("tcp", r.addr); err == nil {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if err != nil {
		t.Errorf("listen again on %s: %v", r.addr, err)
		return
	}
	r.srv = &http.Server{Handler: r.h, ReadHeaderTimeout: 10 * time.Second}
	r.done = make(chan struct{})
	go func(srv *http.Server, done chan struct{}) {
		_ = srv.Serve(ln)
		close(done)
	}(r.srv, r.done)
}

// restart closes the server, with every connection, and starts another.
func (r *restartable) restart(t *testing.T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.srv.Close()
	<-r.done
	r.start(t)
}

// TestRESTRestartCostsNoQuery: the REST API restarted five times under a
// steady load of two merchants' queries (4 workers each waiting 5-25 ms
// between queries), each restart after a burst of 48 queries at once had
// filled the pools (pooled connections the REST side closed, idle or
// with a call in flight): 0 failed queries.
func TestRESTRestartCostsNoQuery(t *testing.T) {
	t.Parallel()
	f := newRESTFake(t)
	f.SetLatency(2 * time.Millisecond) // calls in flight when it restarts
	rest := startRestartable(t, f)
	p := startGateway(t, map[string]string{"REST_BASE_URL": "http://" + rest.addr, "SANDBOX": "false",
		"RATE_LIMIT_REQUESTS_PER_SECOND": "0", "RATE_LIMIT_REST_CALLS_PER_SECOND": "0"})
	// Merchants the REST API has accepted, as a deployed gateway's are:
	// the first burst is not an unaccepted pair's.
	acceptMerchants(t, p, f)
	ids := map[string]string{"A": f.sb.Payments(f.A.biz.APIKey)[0].ID, "B": f.sb.Payments(f.B.biz.APIKey)[0].ID}
	var queries, failed atomic.Int64
	var firstFailure atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, m := range []*merchant{&f.A, &f.B} {
		for w := range 2 {
			wg.Go(func() {
				for i := 0; ; i++ {
					// A steady load, not a flood: each worker waits a little
					// between its queries, so that the pool holds idle
					// connections when the REST API restarts.
					select {
					case <-stop:
						return
					case <-time.After(time.Duration(5+(i*7+w*3)%20) * time.Millisecond):
					}
					q := gqlReq{Header: m.Header(), Query: `{ payments(first: 5) { nodes { id status } } }`}
					if (i+w)%2 == 0 {
						q = gqlReq{Header: m.Header(), Query: `query($id: ID!) { payment(id: $id) { id status } }`, Variables: map[string]any{"id": ids[m.Name]}}
					}
					r := p.do(context.Background(), q)
					queries.Add(1)
					if o := r.Outcome(); o != "ok" {
						failed.Add(1)
						firstFailure.CompareAndSwap(nil, o+": "+strings.TrimSpace(string(r.Body)))
					}
				}
			})
		}
	}
	query := func(m *merchant) {
		r := p.do(context.Background(), gqlReq{Header: m.Header(), Query: `query($id: ID!) { payment(id: $id) { id status } }`, Variables: map[string]any{"id": ids[m.Name]}})
		queries.Add(1)
		if o := r.Outcome(); o != "ok" {
			failed.Add(1)
			firstFailure.CompareAndSwap(nil, o+": "+strings.TrimSpace(string(r.Body)))
		}
	}
	for range 5 {
		// A burst first, as a busy hour leaves the pool: many connections,
		// idle when the REST API restarts.
		var burst sync.WaitGroup
		for i := range 48 {
			burst.Go(func() { query([]*merchant{&f.A, &f.B}[i%2]) })
		}
		burst.Wait()
		time.Sleep(50 * time.Millisecond)
		rest.restart(t)
		time.Sleep(250 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	t.Logf("%d queries across 5 REST restarts, %d failed", queries.Load(), failed.Load())
	if failed.Load() != 0 {
		t.Errorf("%d of %d queries failed, want 0; first: %v", failed.Load(), queries.Load(), firstFailure.Load())
	}
}
