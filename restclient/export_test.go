package restclient

// Helpers of the tests that read unexported state.

// merchantKeyOf is the identity of a pair under the process's key (tests).
func merchantKeyOf(c Credentials) merchantKey { return processMerchantKey.sum(c) }

// inFlight reports the calls holding a slot of the process, and the
// merchants with a call holding or waiting for a slot (tests).
func (l *Limiter) inFlight() (calls, merchants int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range l.merchants {
		if m.refs > 0 {
			merchants++
		}
	}
	return len(l.process), merchants
}

func (t *merchantTable) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.trusted.Len() + t.untrusted.Len()
}

// counts reports the accepted and refused pairs and the probes (tests).
func (g *gate) counts() (accepted, refused, probes int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.accepted.Len(), g.refused.Len(), len(g.probes)
}

// table returns the calls in fs's table (tests); nil fs: none.
func (fs *flights) table() []flightKey {
	if fs == nil {
		return nil
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	var ks []flightKey
	for k := range fs.m {
		ks = append(ks, k)
	}
	return ks
}
