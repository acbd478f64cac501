package e2e

// TestLiveRefusedMemory is issue 37's row 1 through the binary
// (GOMEMLIMIT=160MiB): one WebSocket whose operations the rate limits
// and the connection's operation cap refuse must not keep any refused
// operation's state (its decoded variables, its cost plan) past its
// refusal. Two pairs, one after the other on one gateway, each on one
// connection with 64 operations of nodes(ids:) with 100 ids in flight:
// an invented pair, and a real merchant whose REST-call budget serves
// one of them every 2 s. The process's peak RSS stays under 100 MiB,
// and 2 s after each run, its connection still open, the in-use heap is
// within 5 MiB of the idle gateway's.

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
)

func TestLiveRefusedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the gateway binary under 30 s of refused WebSocket operations: not in -short")
	}
	fake := newRESTFake(t)
	// Five nodes(ids:) of 100 ids at once, then one every 2 s, are within
	// the budget (the burst is at least MAX_COMPLEXITY).
	g := startLiveGateway(t, fake, map[string]string{
		"RATE_LIMIT_REST_CALLS_PER_SECOND": "50"}) // the burst: MAX_COMPLEXITY, 500
	idle, _ := g.heap(t)
	invented := merchant{Name: "invented", Key: "InventedKeyE2e_w3Qz8Lp1", Secret: "InventedSecretE2e_Hs5Kd2Xv7Rm4"}
	for _, tc := range []struct {
		name   string
		m      merchant
		accept bool // a read first, so that the REST API has accepted the pair
	}{
		{"invented_pair", invented, false},
		{"real_merchant", fake.A, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
			defer cancel()
			c, _, err := liveDial(ctx, g.URL, pairOf(tc.m))
			if err != nil {
				t.Fatal(err)
			}
			defer c.CloseNow()
			if tc.accept {
				accept(t, ctx, c, fake, tc.m)
			}
			codes, err := refusedFlood(ctx, c, 15*time.Second, 64)
			if err != nil {
				t.Fatalf("the connection ended: %v (outcomes %v)", err, codes)
			}
			// Served: answered without a refusal (the ids are not the
			// merchant's: NOT_FOUND; the invented pair's: UNAUTHENTICATED).
			refused := codes["RATE_LIMITED"]
			served := 0
			for _, n := range codes {
				served += n
			}
			served -= refused
			t.Logf("%s: outcomes %v", tc.name, codes)
			if refused == 0 {
				t.Fatalf("no operation refused (%v): the run proves nothing", codes)
			}
			// 2 s after the last answer, the connection still open.
			time.Sleep(2 * time.Second)
			after, _ := g.heap(t)
			t.Logf("%s: %d served, %d refused; heap in use %s, idle %s", tc.name, served, refused, mib(after), mib(idle))
			if after-idle > 5<<20 {
				t.Errorf("%s: heap in use 2 s after the run, its connection open, %s over idle (%s), want < 5 MiB", tc.name, mib(after-idle), mib(idle))
			}
			c.Close(websocket.StatusNormalClosure, "")
		})
	}
	peak := g.PeakRSS(t)
	t.Logf("peak RSS (VmHWM) %s (before the fix: 404 MiB with an invented pair, 455 MiB with a real merchant)", mib(peak))
	if peak >= 100<<20 {
		t.Errorf("peak RSS (VmHWM) %s, want < 100 MiB", mib(peak))
	}
}

// refusedFlood sends nodes(ids:) operations of 100 fresh ids on c, inFlight
// at once, for d, then waits for the answers of those in flight; it
// counts the outcomes by the first error's code ("" served). The
// connection stays open.
func refusedFlood(ctx context.Context, c *websocket.Conn, d time.Duration, inFlight int) (map[string]int, error) {
	codes := map[string]int{}
	var mu sync.Mutex
	var wmu sync.Mutex
	write := func(m liveMsg) error {
		wmu.Lock()
		defer wmu.Unlock()
		return wsjson.Write(ctx, c, m)
	}
	sem := make(chan struct{}, inFlight)
	var open atomic.Int64 // operations sent and not ended
	readErr := make(chan error, 1)
	drained := make(chan struct{})
	var stopped atomic.Bool
	go func() {
		for {
			var m liveMsg
			if err := wsjson.Read(ctx, c, &m); err != nil {
				readErr <- err
				return
			}
			end := false
			switch m.Type {
			case "ping":
				_ = write(liveMsg{Type: "pong"})
			case "next":
				var p struct {
					Errors []struct{ Extensions struct{ Code string } }
				}
				_ = json.Unmarshal(m.Payload, &p)
				code := ""
				if len(p.Errors) > 0 {
					code = p.Errors[0].Extensions.Code
				}
				mu.Lock()
				codes[code]++
				mu.Unlock()
			case "error":
				var errs []struct{ Extensions struct{ Code string } }
				_ = json.Unmarshal(m.Payload, &errs)
				code := "error"
				if len(errs) > 0 {
					code = errs[0].Extensions.Code
				}
				mu.Lock()
				codes[code]++
				mu.Unlock()
				end = true
			case "complete":
				end = true
			}
			if end {
				<-sem
				if open.Add(-1) == 0 && stopped.Load() {
					close(drained)
					// Keep reading (pings) until the caller closes c.
					go func() {
						for {
							var m liveMsg
							if wsjson.Read(ctx, c, &m) != nil {
								return
							}
							if m.Type == "ping" {
								_ = write(liveMsg{Type: "pong"})
							}
						}
					}()
					return
				}
			}
		}
	}()
	result := func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		out := make(map[string]int, len(codes))
		for k, v := range codes {
			out[k] = v
		}
		return out
	}
	until := time.Now().Add(d)
	for i := 0; time.Now().Before(until); i++ {
		select {
		case sem <- struct{}{}:
		case err := <-readErr:
			return result(), err
		case <-ctx.Done():
			return result(), ctx.Err()
		}
		ids := make([]string, 100)
		for k := range ids {
			ids[k] = fmt.Sprintf("pay_e2e_refused_%d_%d", i, k)
		}
		p, _ := json.Marshal(map[string]any{"query": `query($ids: [ID!]!) { nodes(ids: $ids) { id } }`, "variables": map[string]any{"ids": ids}})
		open.Add(1)
		if err := write(liveMsg{ID: strconv.Itoa(i), Type: "subscribe", Payload: p}); err != nil {
			return result(), err
		}
	}
	stopped.Store(true)
	if open.Load() == 0 {
		return result(), nil
	}
	select {
	case <-drained:
		return result(), nil
	case err := <-readErr:
		return result(), err
	case <-ctx.Done():
		return result(), ctx.Err()
	}
}
