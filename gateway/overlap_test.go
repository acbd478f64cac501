package gateway

import (
	"sync"
	"time"
)

// Overlap holds each call that enters it until n are held, then lets
// them all go: a REST fake's calls overlap as far as the gateway lets
// them, without a sleep standing for the REST API's latency. The bound
// only ends a call held alone that no other joins (a slower run, not a
// wrong one).
type Overlap struct {
	mu   sync.Mutex
	n    int
	held []chan struct{}
}

// NewOverlap holds calls n at a time.
func NewOverlap(n int) *Overlap { return &Overlap{n: n} }

// Hold returns once n calls, this one among them, are held.
func (o *Overlap) Hold() {
	c := make(chan struct{})
	o.mu.Lock()
	o.held = append(o.held, c)
	o.releaseLocked()
	o.mu.Unlock()
	select {
	case <-c:
	case <-time.After(2 * time.Second):
	}
}

// SetN holds calls n at a time from now on (fewer when fewer callers
// are left), letting go of those held if they are n already.
func (o *Overlap) SetN(n int) {
	o.mu.Lock()
	o.n = n
	o.releaseLocked()
	o.mu.Unlock()
}

func (o *Overlap) releaseLocked() {
	if len(o.held) < o.n {
		return
	}
	for _, c := range o.held {
		close(c)
	}
	o.held = nil
}
