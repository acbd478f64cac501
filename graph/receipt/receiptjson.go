package receipt

// The cost receipt written without reflection: every answer carries one.

import "strconv"

// AppendJSON appends r as json.Marshal writes it and reports true, or
// reports false for a receipt with the inspector's calls (strings to
// escape). FuzzReceiptAppendJSON compares it with json.Marshal.
func (r *Receipt) AppendJSON(b []byte) ([]byte, bool) {
	if r == nil || len(r.Calls) != 0 {
		return b, false
	}
	b = append(b, `{"estimated":`...)
	b = strconv.AppendInt(b, int64(r.Estimated), 10)
	b = append(b, `,"made":`...)
	b = strconv.AppendInt(b, int64(r.Made), 10)
	b = append(b, `,"retries":`...)
	b = strconv.AppendInt(b, int64(r.Retries), 10)
	b = append(b, `,"saved":`...)
	b = strconv.AppendInt(b, int64(r.Saved), 10)
	if u := r.Unmade; u != nil {
		b = append(b, `,"unmade":{"deduplicated":`...)
		b = strconv.AppendInt(b, int64(u.Deduplicated), 10)
		b = append(b, `,"shortPages":`...)
		b = strconv.AppendInt(b, int64(u.ShortPages), 10)
		b = append(b, `,"shared":`...)
		b = strconv.AppendInt(b, int64(u.Shared), 10)
		b = append(b, `,"notReached":`...)
		b = strconv.AppendInt(b, int64(u.NotReached), 10)
		b = append(b, '}')
	}
	if l := r.Budget; l != nil {
		b = append(b, `,"budget":{"remaining":`...)
		b = strconv.AppendInt(b, int64(l.Remaining), 10)
		b = append(b, `,"limit":`...)
		b = strconv.AppendInt(b, int64(l.Limit), 10)
		b = append(b, `,"resetSeconds":`...)
		b = strconv.AppendInt(b, int64(l.ResetSeconds), 10)
		b = append(b, '}')
	}
	return append(b, '}'), true
}
