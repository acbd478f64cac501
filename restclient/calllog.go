package restclient

// The per-operation log of REST calls: the cost receipt and, when kept, the
// REST inspector.

import (
	"context"
	"sync"
	"time"

	"paygraph/internal/opscope"
)

// CallRecord is one REST call as the REST inspector shows it: no base URL,
// query or credential.
type CallRecord struct {
	Endpoint Endpoint      // the route template, e.g. /api/v1/payments/{id}
	ID       string        // the id of the path ("" for the list)
	Status   int           // the last attempt's HTTP status (0: no answer)
	Duration time.Duration // from the first attempt to the end of the last
	Bytes    int64         // the last attempt's body bytes read
	Retries  int           // attempts after the first
}

const maxKeptCalls = 1000 // records one log keeps

// CallLog counts one operation's REST calls, safe for concurrent use; records
// are kept after Keep.
type CallLog struct {
	mu      sync.Mutex
	made    int // calls that sent at least one request
	retries int // requests after each call's first
	shared  int // calls answered by another operation's call in flight
	keep    bool
	calls   []CallRecord
}

// Keep makes the log keep a record of each call (the REST inspector).
func (l *CallLog) Keep() {
	l.mu.Lock()
	l.keep = true
	l.mu.Unlock()
}

// Counts are the calls made and their retries so far.
func (l *CallLog) Counts() (made, retries int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.made, l.retries
}

// Shared is how many calls waited for another operation's (share.go).
func (l *CallLog) Shared() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.shared
}

func (l *CallLog) addShared() {
	l.mu.Lock()
	l.shared++
	l.mu.Unlock()
}

// Records returns a copy of the records kept, in the order calls ended.
func (l *CallLog) Records() []CallRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]CallRecord(nil), l.calls...)
}

func (l *CallLog) add(r *CallRecord, attempts int) {
	if attempts == 0 {
		return // refused before sending (an open circuit): no call made
	}
	l.mu.Lock()
	l.made++
	l.retries += attempts - 1
	if l.keep && len(l.calls) < maxKeptCalls {
		r.Retries = attempts - 1
		l.calls = append(l.calls, *r)
	}
	l.mu.Unlock()
}

type callLogKey struct{}

// WithCallLog returns a context whose REST calls are counted in l.
func WithCallLog(ctx context.Context, l *CallLog) context.Context {
	return opscope.WithValue(ctx, callLogKey{}, l)
}

func callLogFrom(ctx context.Context) *CallLog {
	l, _ := ctx.Value(callLogKey{}).(*CallLog)
	return l
}

// callStat is what the attempts of one logged call tell its record.
type callStat struct {
	attempts int
	status   int
	bytes    int64
}
