package graph_test

import (
	"context"
	"encoding/json"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"paygraph/graph"
	"paygraph/restclient"
	"paygraph/sandbox"
)

// joinREST is the sandbox behind a counter of payment-detail calls and of
// the most in flight at once; the detail of failID answers 404. The first
// detail calls are held until wave of them are in flight together
// (waveFull closed), so that a fan-out reaches its bound whatever the
// machine's speed; the later ones are not held.
type joinREST struct {
	sb             *sandbox.Server
	failID         atomic.Pointer[string]
	mu             sync.Mutex
	details        map[string]int
	inFlight, peak int
	wave           int
	waveFull       chan struct{}
}

func (j *joinREST) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, detail := strings.CutPrefix(r.URL.Path, "/api/v1/payments/")
	if !detail {
		j.sb.ServeHTTP(w, r)
		return
	}
	j.mu.Lock()
	j.details[id]++
	j.inFlight++
	j.peak = max(j.peak, j.inFlight)
	if j.inFlight == j.wave {
		select {
		case <-j.waveFull:
		default:
			close(j.waveFull)
		}
	}
	full := j.waveFull
	j.mu.Unlock()
	defer func() { j.mu.Lock(); j.inFlight--; j.mu.Unlock() }()
	select {
	case <-full:
	case <-r.Context().Done(): // a fan-out that never reaches the wave: failed by the client's timeout
		return
	}
	if f := j.failID.Load(); f != nil && *f == id {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":"Payment not found"}`))
		return
	}
	j.sb.ServeHTTP(w, r)
}

// joinedREST is the REST client, remembering how many payment details
// the payments resolver's list join fetched (its stack names it).
type joinedREST struct {
	*restclient.Client
	joined atomic.Int64
}

func (j *joinedREST) GetPayments(ctx context.Context, ids []string) []restclient.Result[*restclient.Payment] {
	buf := make([]byte, 64<<10)
	if strings.Contains(string(buf[:runtime.Stack(buf, false)]), "joinAddresses") {
		j.joined.Add(int64(len(ids)))
	}
	return j.Client.GetPayments(ctx, ids)
}

// TestListJoin: a page whose items select customer.address gets the
// details in one fan-out of the payments resolver (graph/listjoin.go),
// each once, within the request's bound of concurrent REST calls; a
// failed detail is null with its own error at its own path, as on the
// resolver path; an address left out by @skip costs no call.
func TestListJoin(t *testing.T) {
	t.Parallel()
	sb := sandbox.New(sandbox.Options{})
	j := &joinREST{sb: sb}
	var jr *joinedREST
	const requestBound = 4
	h, _ := serveGraphQL(t, graph.RigConfig{RESTHandler: j, OverHTTP: true, RequestLimit: requestBound,
		WrapREST: func(rc *restclient.Client) graph.REST {
			jr = &joinedREST{Client: rc}
			return jr
		}})
	biz := sb.Businesses()[0]
	address := map[string]string{}
	for _, p := range sb.Payments(biz.APIKey) {
		address[p.ID] = p.Customer.Address
	}

	type item struct {
		ID       string `json:"id"`
		Customer *struct {
			Address *string `json:"address"`
		} `json:"customer"`
	}
	type page struct {
		Payments struct {
			Edges []struct {
				Node *item `json:"node"`
			} `json:"edges"`
			Nodes []*item `json:"nodes"`
		} `json:"payments"`
	}
	const query = `{ payments(first: 12) { edges { node { id customer { address } } } nodes { id customer { address } } } }`
	for _, tc := range []struct {
		name      string
		query     string
		fail      int // the item whose detail fails, -1 none
		wantCalls int // detail calls
	}{
		{"edges and nodes, each detail once", query, -1, 12},
		{"a failed detail is null with its error at its path", query, 5, 12},
		{"an address left out by @skip", `{ payments(first: 12) { nodes { id customer { address @skip(if: true) name } } } }`, -1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j.mu.Lock()
			j.details, j.peak = map[string]int{}, 0
			j.wave, j.waveFull = requestBound, make(chan struct{})
			j.mu.Unlock()
			jr.joined.Store(0)
			var failID string
			if tc.fail >= 0 {
				failID = sb.Payments(biz.APIKey)[tc.fail].ID
			}
			j.failID.Store(&failID)
			ans, _ := gqlPost(t, h, biz, tc.query, nil)
			var got page
			if err := json.Unmarshal(ans.Data, &got); err != nil {
				t.Fatalf("data %s: %v", ans.Data, err)
			}
			items := got.Payments.Nodes
			if len(items) != 12 {
				t.Fatalf("%d items, want 12 (%s)", len(items), ans.Data)
			}
			for i, e := range got.Payments.Edges {
				items = append(items, e.Node)
				if e.Node.ID != got.Payments.Nodes[i].ID {
					t.Errorf("edge %d is %s, node %d %s", i, e.Node.ID, i, got.Payments.Nodes[i].ID)
				}
			}
			for i, it := range items {
				if tc.wantCalls == 0 {
					if it.Customer == nil || it.Customer.Address != nil {
						t.Errorf("item %d: address %v, want none selected", i, it.Customer)
					}
					continue
				}
				switch {
				case it.ID == failID:
					if it.Customer == nil || it.Customer.Address != nil {
						t.Errorf("item %d (failed): address %v, want null", i, it.Customer)
					}
				case it.Customer == nil || it.Customer.Address == nil || *it.Customer.Address != address[it.ID]:
					t.Errorf("item %d (%s): address %v, want %q", i, it.ID, it.Customer, address[it.ID])
				}
			}
			var wantErrs []string
			if tc.fail >= 0 {
				wantErrs = []string{
					`["payments","edges",5,"node","customer","address"] NOT_FOUND`,
					`["payments","nodes",5,"customer","address"] NOT_FOUND`,
				}
			}
			var gotErrs []string
			for _, e := range ans.Errors {
				p, _ := json.Marshal(e.Path)
				gotErrs = append(gotErrs, string(p)+" "+e.Extensions["code"].(string))
			}
			if strings.Join(gotErrs, "\n") != strings.Join(wantErrs, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(gotErrs, "\n"), strings.Join(wantErrs, "\n"))
			}
			j.mu.Lock()
			defer j.mu.Unlock()
			calls := 0
			for id, n := range j.details {
				calls += n
				if n != 1 {
					t.Errorf("detail %s fetched %d times, want once", id, n)
				}
			}
			if calls != tc.wantCalls {
				t.Errorf("%d detail calls, want %d", calls, tc.wantCalls)
			}
			if got := jr.joined.Load(); got != int64(tc.wantCalls) {
				t.Errorf("%d details fetched by the list join, want all %d", got, tc.wantCalls)
			}
			if tc.wantCalls > 0 && j.peak != requestBound {
				t.Errorf("peak detail calls in flight %d, want the request's bound %d", j.peak, requestBound)
			}
		})
	}
}
