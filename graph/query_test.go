package graph

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"

	"paygraph/graph/relay"
	"paygraph/restclient"
)

// pagedREST serves a list of n payments in pages whose size it chooses,
// ignoring the requested limit when short is set, like a REST API that
// answers short pages. Its cursor is the offset.
type pagedREST struct {
	REST
	n, short int
	empty    bool // every page is empty but claims more
	calls    int
}

func (p *pagedREST) ListPayments(_ context.Context, lp restclient.ListParams) (*restclient.PaymentPage, error) {
	p.calls++
	off, _ := strconv.Atoi(lp.Cursor)
	size := lp.Limit
	if p.short > 0 {
		size = min(size, p.short)
	}
	page := &restclient.PaymentPage{}
	if p.empty {
		next := strconv.Itoa(off + 1)
		page.HasMore, page.NextCursor = true, &next
		return page, nil
	}
	for i := off; i < min(off+size, p.n); i++ {
		page.Data = append(page.Data, restclient.Payment{ID: fmt.Sprintf("pay_%03d", i), Status: restclient.StatusSucceeded})
	}
	if end := off + len(page.Data); end < p.n {
		next := strconv.Itoa(end)
		page.HasMore, page.NextCursor = true, &next
	}
	return page, nil
}

// callerContext is a request's context with loaders over rest and a
// credential pair (a cursor is bound to one).
func callerContext(rest REST) context.Context {
	return restclient.WithCredentials(requestContext(rest), restclient.Credentials{APIKey: "ak_test_q", APISecret: "sk_test_q"})
}

func TestPaymentsPaging(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		rest         *pagedREST
		first        int
		wantPerPage  int
		wantMaxCalls int
	}{
		{"exact pages", &pagedREST{n: 45}, 10, 10, 1},
		// Short pages: the connection is as short (the walk reads the
		// pages the estimate counted, and no more).
		{"short REST pages", &pagedREST{n: 45, short: 3}, 10, 3, 1},
		{"tiny REST pages", &pagedREST{n: 45, short: 1}, 10, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Resolver{}
			var got []string
			var after *string
			for range 100 {
				tc.rest.calls = 0
				first := tc.first
				c, err := r.Query().Payments(callerContext(tc.rest), &first, after, nil)
				if err != nil {
					t.Fatal(err)
				}
				if tc.rest.calls > tc.wantMaxCalls {
					t.Fatalf("%d REST calls for one page", tc.rest.calls)
				}
				if c.PageInfo.HasNextPage && len(c.Edges) < tc.wantPerPage {
					t.Fatalf("page of %d with a next page", len(c.Edges))
				}
				for _, e := range c.Edges {
					got = append(got, e.Node.ID)
				}
				if !c.PageInfo.HasNextPage {
					break
				}
				after = c.PageInfo.EndCursor
			}
			var want []string
			for i := range tc.rest.n {
				want = append(want, fmt.Sprintf("pay_%03d", i))
			}
			if !slices.Equal(got, want) {
				t.Fatalf("walked %v", got)
			}
		})
	}
}

// A REST API that answers empty pages forever still costs one call per
// query: the page the estimate counted.
func TestPaymentsBoundedOnEmptyPages(t *testing.T) {
	t.Parallel()
	rest := &pagedREST{empty: true}
	r := &Resolver{}
	first := 10
	c, err := r.Query().Payments(callerContext(rest), &first, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rest.calls != 1 || len(c.Edges) != 0 || !c.PageInfo.HasNextPage {
		t.Fatalf("calls %d, edges %d, pageInfo %+v", rest.calls, len(c.Edges), c.PageInfo)
	}
}

func TestEdgeCursorsPointPastTheirEdge(t *testing.T) {
	t.Parallel()
	rest := &pagedREST{n: 12}
	r := &Resolver{}
	first := 5
	ctx := callerContext(rest)
	c, err := r.Query().Payments(ctx, &first, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := r.cursorSigner(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range c.Edges {
		p, err := signer.Decode(e.Cursor())
		if err != nil {
			t.Fatal(err)
		}
		// The last edge of a page that has a next page points at the next
		// page itself, so continuing from it reads nothing twice.
		want := relay.Position{Skip: i + 1}
		if i == len(c.Edges)-1 {
			want = relay.Position{RestCursor: "5"}
		}
		if p != want {
			t.Errorf("edge %d cursor = %+v, want %+v", i, p, want)
		}
	}
}
