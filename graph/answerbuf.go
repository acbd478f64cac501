package graph

import (
	"context"
	"sync"
)

// answerBuffers keeps the root fast paths' answer buffers (rootfast.go,
// fastlist.go) between operations. A buffer comes back only through
// ReleaseFastAnswer, which the edge calls once it has written its own
// HTML-safe copy of the answer, and only when it is still the
// response's data (FastAnswerOf): so no buffer is handed to another
// operation while anything of its caller's answer may still be read
// from it. A buffer not handed back (the response replaced, an answer
// written some other way) is garbage as before. A buffer is cleared as
// it goes back: nothing of one caller's answer waits in the pool, and a
// release before the write would show as an answer of zeros
// (TestFastAnswerBuffersKeptApart). Each entry is a box
// (*[]byte) that travels with its buffer, so that putting it back
// allocates nothing.
//
// Before, each answer was an allocation of its own (4 KB for the
// 20-alias query, 6 KB for a page of 20) and 2.6 % of Aliases20's CPU
// in memory.
var answerBuffers = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledAnswer is the largest answer buffer kept for reuse.
const maxPooledAnswer = 256 << 10

// answerBuffer returns an empty buffer of at least n bytes for the
// operation's fast answer, from the pool when one is big enough, and
// holds its box until ReleaseFastAnswer.
func (l *Loaders) answerBuffer(n int) []byte {
	bp := answerBuffers.Get().(*[]byte)
	if cap(*bp) < n {
		*bp = make([]byte, 0, n)
	}
	l.answerBox = bp
	return (*bp)[:0]
}

// answered notes b, a buffer of answerBuffer's filled, as the operation's
// fast answer, and returns it.
func (l *Loaders) answered(b []byte) []byte {
	l.fastAnswer = b
	return b
}

// FastAnswerOf returns the operation's loaders when data is the data the
// root fast path wrote for the operation of ctx, unchanged since: compact
// JSON, nothing between its tokens, strings escaped as gqlgen escapes
// them; nil otherwise. It goes by the buffer's identity, so data that an
// interceptor answered instead (the response budget's error, say) is
// never vouched for. The edge then only has to make the answer HTML-safe
// as json.Marshal would, without tracking where strings begin and end
// (gqlhttp/response.go), and hands the buffer back once it has written
// its copy (ReleaseFastAnswer).
func FastAnswerOf(ctx context.Context, data []byte) *Loaders {
	if len(data) == 0 {
		return nil
	}
	l, _ := ctx.Value(loadersKey{}).(*Loaders)
	if l == nil || len(l.fastAnswer) != len(data) || &l.fastAnswer[0] != &data[0] {
		return nil
	}
	return l
}

// ReleaseFastAnswer hands the fast answer's buffer back for reuse, once
// the edge has written its copy of it and keeps no reference to it;
// cleared, so that nothing of this caller's answer waits in the pool. A
// second call does nothing.
func (l *Loaders) ReleaseFastAnswer() {
	bp, data := l.answerBox, l.fastAnswer
	l.answerBox, l.fastAnswer = nil, nil
	if bp == nil || cap(data) > maxPooledAnswer {
		return
	}
	clear(data)
	*bp = data[:0]
	answerBuffers.Put(bp)
}
