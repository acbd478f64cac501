package receipt

// The cost receipt written without reflection: every answer carries one.

import "strconv"

// AppendJSON appends r as json.Marshal writes it and reports true, or reports
// false for a receipt with the inspector's calls (strings to escape).
// FuzzReceiptAppendJSON compares it with json.Marshal.
func (r *Receipt) AppendJSON(b []byte) ([]byte, bool) {
	if r == nil || len(r.Calls) != 0 {
		return b, false
	}
	b = appendInt(b, `{"estimated":`, r.Estimated)
	b = appendInt(b, `,"made":`, r.Made)
	b = appendInt(b, `,"retries":`, r.Retries)
	b = appendInt(b, `,"saved":`, r.Saved)
	if u := r.Unmade; u != nil {
		b = appendInt(b, `,"unmade":{"deduplicated":`, u.Deduplicated)
		b = appendInt(b, `,"shortPages":`, u.ShortPages)
		b = appendInt(b, `,"shared":`, u.Shared)
		b = append(appendInt(b, `,"notReached":`, u.NotReached), '}')
	}
	if l := r.Budget; l != nil {
		b = appendInt(b, `,"budget":{"remaining":`, l.Remaining)
		b = appendInt(b, `,"limit":`, l.Limit)
		b = append(appendInt(b, `,"resetSeconds":`, l.ResetSeconds), '}')
	}
	return append(b, '}'), true
}

// appendInt appends key, the JSON before a number, and n.
func appendInt(b []byte, key string, n int) []byte {
	return strconv.AppendInt(append(b, key...), int64(n), 10)
}
