package relay

// Walk serves one page of a Relay connection from the REST API's cursor
// pages: which page to fetch and how many items, which items it takes, the
// position after each (every edge's cursor), and whether more follow.
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

// NewWalk serves first edges from position from, in pages of at most pageMax and maxCalls calls.
func NewWalk(from Position, first, pageMax, maxCalls int) *Walk {
	return &Walk{pos: from, want: first, pageMax: pageMax, callsLeft: maxCalls}
}

// Next says which REST page to fetch: at cursor ("" first), limit items
// (skipped and wanted, at least one so first: 0 learns whether the list
// goes on). ok is false when the connection is full, the list ended or the
// calls are spent.
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

// Page takes the page Next asked for: n items and the next page's REST
// cursor ("" none). The connection's edges are its items [start, end).
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

// After is the position right after item i of the page in hand.
func (w *Walk) After(i int) Position {
	if i+1 == w.pageLen && w.nextPage != "" {
		return Position{RestCursor: w.nextPage, Status: w.pos.Status}
	}
	return Position{RestCursor: w.page, Skip: i + 1, Status: w.pos.Status}
}

// HasNext tells, once the walk is over, whether items follow (pageInfo.hasNextPage).
func (w *Walk) HasNext() bool { return w.hasNext }
