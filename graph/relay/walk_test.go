package relay

import (
	"fmt"
	"reflect"
	"strconv"
	"testing"

	"paygraph/restclient"
)

// restList is a REST list of total items (item i is i) served from a
// cursor that is the offset of a page's first item, in pages of at most
// pageMax; empty, when set, makes it answer empty pages that claim more.
// It counts its calls.
type restList struct {
	total, pageMax int
	empty          bool
	extra          int // items served beyond the limit asked (a REST API may)
	calls          int
	limits         []int
}

func (l *restList) fetch(t *testing.T, cursor string, limit int) (items []int, next string) {
	t.Helper()
	l.calls++
	l.limits = append(l.limits, limit)
	if limit < 1 || limit > l.pageMax {
		t.Fatalf("limit %d outside 1..%d", limit, l.pageMax)
	}
	if l.empty {
		return nil, "more"
	}
	off := 0
	if cursor != "" {
		var err error
		if off, err = strconv.Atoi(cursor); err != nil {
			t.Fatalf("cursor %q is not one the REST list made", cursor)
		}
	}
	for i := off; i < l.total && i < off+limit+l.extra; i++ {
		items = append(items, i)
	}
	if end := off + len(items); end < l.total {
		next = strconv.Itoa(end)
	}
	return items, next
}

// serve runs one connection of first edges from from, as the payments
// resolver does.
func serve(t *testing.T, l *restList, from Position, first, maxCalls int) (items []int, after []Position, hasNext bool) {
	t.Helper()
	w := NewWalk(from, first, l.pageMax, maxCalls)
	for cursor, limit, ok := w.Next(); ok; cursor, limit, ok = w.Next() {
		page, next := l.fetch(t, cursor, limit)
		start, end := w.Page(len(page), next)
		for i := start; i < end; i++ {
			items = append(items, page[i])
			after = append(after, w.After(i))
		}
	}
	return items, after, w.HasNext()
}

func TestWalk(t *testing.T) {
	t.Parallel()
	const paid = restclient.StatusSucceeded
	for _, tc := range []struct {
		name       string
		list       restList
		from       Position
		first      int
		wantItems  []int
		wantAfter  []Position
		wantNext   bool
		wantLimits []int
		short      int // the REST page answered holds this many items more than asked
	}{
		{name: "first page: the last edge points at the REST page after it", list: restList{total: 10, pageMax: 100}, first: 3,
			wantItems: []int{0, 1, 2}, wantAfter: []Position{{Skip: 1}, {Skip: 2}, {RestCursor: "3"}},
			wantNext: true, wantLimits: []int{3}},
		{name: "within a page: skip and take from the same REST page", list: restList{total: 10, pageMax: 100},
			from: Position{Skip: 3}, first: 2,
			wantItems: []int{3, 4}, wantAfter: []Position{{Skip: 4}, {RestCursor: "5"}},
			wantNext: true, wantLimits: []int{5}},
		{name: "a REST page longer than asked: the edges point into it", list: restList{total: 10, pageMax: 100},
			from: Position{Skip: 3}, first: 2, short: 5,
			wantItems: []int{3, 4}, wantAfter: []Position{{Skip: 4}, {Skip: 5}},
			wantNext: true, wantLimits: []int{5}},
		{name: "exactly the whole list", list: restList{total: 3, pageMax: 100}, first: 3,
			wantItems: []int{0, 1, 2}, wantAfter: []Position{{Skip: 1}, {Skip: 2}, {Skip: 3}},
			wantNext: false, wantLimits: []int{3}},
		{name: "across REST pages: the last item of a page points at the next page", list: restList{total: 25, pageMax: 10},
			from: Position{Skip: 8}, first: 4,
			wantItems: []int{8, 9, 10, 11},
			wantAfter: []Position{{Skip: 9}, {RestCursor: "10"}, {RestCursor: "10", Skip: 1}, {RestCursor: "12"}},
			wantNext:  true, wantLimits: []int{10, 2}},
		{name: "the list ends on a page boundary", list: restList{total: 10, pageMax: 10}, first: 10,
			wantItems: []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9},
			wantAfter: []Position{{Skip: 1}, {Skip: 2}, {Skip: 3}, {Skip: 4}, {Skip: 5}, {Skip: 6}, {Skip: 7}, {Skip: 8}, {Skip: 9}, {Skip: 10}},
			wantNext:  false, wantLimits: []int{10}},
		{name: "first 0 still asks for one item, to learn whether the list goes on", list: restList{total: 5, pageMax: 100}, first: 0,
			wantNext: true, wantLimits: []int{1}},
		{name: "first 0 on an empty list", list: restList{total: 0, pageMax: 100}, first: 0,
			wantNext: false, wantLimits: []int{1}},
		{name: "empty pages that claim more stop at the call bound", list: restList{pageMax: 100, empty: true}, first: 5,
			wantNext: true, wantLimits: []int{5, 5, 5, 5}},
		{name: "the status filter is carried into every position", list: restList{total: 10, pageMax: 100},
			from: Position{Status: paid}, first: 1,
			wantItems: []int{0}, wantAfter: []Position{{RestCursor: "1", Status: paid}}, wantNext: true, wantLimits: []int{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := tc.list
			l.extra = tc.short
			items, after, hasNext := serve(t, &l, tc.from, tc.first, 4)
			if !reflect.DeepEqual(items, tc.wantItems) {
				t.Errorf("items %v, want %v", items, tc.wantItems)
			}
			if !reflect.DeepEqual(after, tc.wantAfter) {
				t.Errorf("positions after each item\n got %+v\nwant %+v", after, tc.wantAfter)
			}
			if hasNext != tc.wantNext {
				t.Errorf("HasNext %v, want %v", hasNext, tc.wantNext)
			}
			if !reflect.DeepEqual(l.limits, tc.wantLimits) {
				t.Errorf("REST calls' limits %v, want %v", l.limits, tc.wantLimits)
			}
		})
	}
}

// TestWalkServesEveryItemOnce: following each connection's last position,
// a client reads the whole list, every item once and in order, whatever
// the page size, the REST API's largest page and whether it answers more
// items than asked, and the last page says there is no next one.
func TestWalkServesEveryItemOnce(t *testing.T) {
	t.Parallel()
	for _, total := range []int{0, 1, 9, 10, 11, 57} {
		for _, pageMax := range []int{1, 3, 10, 100} {
			for _, first := range []int{1, 2, 7, 10, 20} {
				for _, extra := range []int{0, 2} {
					t.Run(fmt.Sprintf("total %d, REST pages of %d (+%d), first %d", total, pageMax, extra, first), func(t *testing.T) {
						l := &restList{total: total, pageMax: pageMax, extra: extra}
						var got []int
						from := Position{}
						for conn := 0; ; conn++ {
							if conn > total+1 {
								t.Fatalf("no end after %d connections", conn)
							}
							items, after, hasNext := serve(t, l, from, first, 4)
							got = append(got, items...)
							if !hasNext {
								break
							}
							if len(after) > 0 {
								from = after[len(after)-1]
							}
						}
						want := make([]int, total)
						for i := range want {
							want[i] = i
						}
						if fmt.Sprint(got) != fmt.Sprint(want) {
							t.Errorf("items read %v, want %v", got, want)
						}
					})
				}
			}
		}
	}
}
