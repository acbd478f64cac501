package relay

// Walk is the arithmetic of serving one page of a Relay connection from
// the REST API's cursor pages: which REST page to fetch next and how many
// items to ask for, which of its items the connection takes, the position
// right after each of them (every edge's cursor), and whether more items
// follow. It lives here, beside Position, because it is what gives every
// edge a position of its own although the REST API has one cursor per
// page; the resolver only fetches.
//
//	w := relay.NewWalk(from, first, 100, 4)
//	for cursor, limit, ok := w.Next(); ok; cursor, limit, ok = w.Next() {
//		page := fetch(cursor, limit)
//		start, end := w.Page(len(page.items), page.nextCursor)
//		for i := start; i < end; i++ { edge(page.items[i], w.After(i)) }
//	}
//	w.HasNext()
type Walk struct {
	pos       Position // where the next REST page starts, and the items of it already served
	want      int      // edges still wanted
	pageMax   int      // the largest page the REST API serves
	callsLeft int
	hasNext   bool
	over      bool

	page     string // the REST cursor of the page in hand
	pageLen  int
	nextPage string // the REST cursor of the page after it, "" if none
}

// NewWalk starts a walk that serves first edges from the position from,
// asking for pages of at most pageMax items and making at most maxCalls
// REST calls (a REST API answering short or empty pages that claim more
// cannot make it loop; the connection then says it has a next page).
func NewWalk(from Position, first, pageMax, maxCalls int) *Walk {
	return &Walk{pos: from, want: first, pageMax: pageMax, callsLeft: maxCalls}
}

// Next says which REST page to fetch: the one at cursor ("" for the
// first), with at most limit items (the items to skip and those wanted,
// and at least one, so that first: 0 still learns whether the list
// goes on). ok is false when the walk is over: the connection is full,
// the list has ended, or the calls are spent.
func (w *Walk) Next() (cursor string, limit int, ok bool) {
	if w.over {
		return "", 0, false
	}
	if w.callsLeft <= 0 {
		w.hasNext, w.over = true, true
		return "", 0, false
	}
	w.callsLeft--
	return w.pos.RestCursor, min(w.pos.Skip+max(w.want, 1), w.pageMax), true
}

// Page takes the page Next asked for: n items, and the REST cursor of
// the page after it ("" when the REST API says there is none). The
// connection's edges are its items [start, end), in order.
func (w *Walk) Page(n int, next string) (start, end int) {
	w.page, w.pageLen, w.nextPage = w.pos.RestCursor, n, next
	start = min(w.pos.Skip, n)
	end = start + min(w.want, n-start)
	w.want -= end - start
	switch {
	case end < n: // items of this page are left over
		w.hasNext, w.over = true, true
	case next == "": // the list has ended
		w.over = true
	default:
		w.pos = Position{RestCursor: next, Status: w.pos.Status}
		if w.want == 0 {
			w.hasNext, w.over = true, true
		}
	}
	return start, end
}

// After is the position right after item i of the page in hand: the
// next item of the same page, or the start of the next page after its
// last item.
func (w *Walk) After(i int) Position {
	if i+1 == w.pageLen && w.nextPage != "" {
		return Position{RestCursor: w.nextPage, Status: w.pos.Status}
	}
	return Position{RestCursor: w.page, Skip: i + 1, Status: w.pos.Status}
}

// HasNext tells, once Next has said the walk is over, whether items
// follow the last edge served (pageInfo.hasNextPage).
func (w *Walk) HasNext() bool { return w.hasNext }
