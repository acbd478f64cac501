package observe

import (
	"context"
	"net/netip"
	"sync"
	"sync/atomic"

	"paygraph/internal/opscope"
)

// RequestStats is what the layers of one HTTP request learn about it, for its access log line. All
// methods are safe for concurrent use and on a nil *RequestStats (where they do nothing).
type RequestStats struct {
	restCalls, restOK atomic.Int64
	client            netip.Addr // the caller's address, set by AccessLog before the handler

	mu                 sync.Mutex
	operation, outcome string
	refusedBy          string // the budget that refused the request, if one did
}

type statsKey struct{}

// WithRequestStats returns a context carrying fresh stats.
func WithRequestStats(ctx context.Context) (context.Context, *RequestStats) {
	s := new(RequestStats)
	return opscope.WithValue(ctx, statsKey{}, s), s
}

// StatsFrom returns the stats carried by ctx, or nil.
func StatsFrom(ctx context.Context) *RequestStats {
	s, _ := ctx.Value(statsKey{}).(*RequestStats)
	return s
}

// NoteRefusedBy records the budget that refused the request (refused_by); the first noted stays.
func (s *RequestStats) NoteRefusedBy(budget string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	if s.refusedBy == "" {
		s.refusedBy = budget
	}
	s.mu.Unlock()
}

// RefusedBy is the budget NoteRefusedBy recorded, or "".
func (s *RequestStats) RefusedBy() string {
	if s == nil {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refusedBy
}

// AddRESTCall counts one REST call (one HTTP attempt).
func (s *RequestStats) AddRESTCall() {
	if s != nil {
		s.restCalls.Add(1)
	}
}

// RESTCalls is the number of REST calls counted so far.
func (s *RequestStats) RESTCalls() int64 {
	if s == nil {
		return 0
	}
	return s.restCalls.Load()
}

// AddRESTSuccess counts one REST call answered 2xx: the credentials work.
func (s *RequestStats) AddRESTSuccess() {
	if s != nil {
		s.restOK.Add(1)
	}
}

// RESTSuccesses is the number of REST calls answered with 2xx so far.
func (s *RequestStats) RESTSuccesses() int64 {
	if s == nil {
		return 0
	}
	return s.restOK.Load()
}

// SetOperation records the GraphQL operation's (sanitised) name and outcome ("ok" or an error code).
func (s *RequestStats) SetOperation(name, outcome string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.operation, s.outcome = name, outcome
	s.mu.Unlock()
}

// Operation returns what SetOperation recorded ("" when nothing was).
func (s *RequestStats) Operation() (name, outcome string) {
	if s == nil {
		return "", ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.operation, s.outcome
}
