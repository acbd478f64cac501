package restclient

// Unaccepted credential pairs. A pair costs nothing to invent, so bounds keyed
// by it hold only once the REST API has answered it 2xx. Until then its calls
// are made one at a time (the others follow the probe's outcome), each drawing
// on small budgets shared by every unaccepted pair, per client address (so one
// flooding address leaves the rest to real merchants) and in all; a refused
// pair is answered from a short negative cache. Only calls made spend the
// budgets (Admit only looks); accepted and refused pairs and probes are
// bounded.

import (
	"cmp"
	"context"
	"errors"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2"
	"github.com/hashicorp/golang-lru/v2/simplelru"

	"paygraph/internal/opscope"
	"paygraph/ratelimit"
)

// Defaults of UnacceptedConfig.
const (
	DefaultUnacceptedCallsPerSecond = 20      // a replica's unaccepted pairs' REST calls a second, together
	DefaultUnacceptedMaxInFlight    = 8       // how many calls of unaccepted pairs a replica makes at once
	DefaultMaxAccepted              = 100_000 // the accepted pairs a replica remembers

	DefaultRefusedTTL    = 10 * time.Second // a refusal answered without a call (short: new pairs soon work)
	maxRefused           = 16_384
	storeTimeout         = 50 * time.Millisecond
	sharedBudgetKey      = "shared"
	addressBudgetKey     = "addr:"
	unknownAddressKey    = "unknown"
	msgUnacceptedLimited = "too many REST calls for credentials the REST API has not accepted yet; retry after "
)

// AcceptedStore shares the accepted merchants (MerchantOf names) between
// replicas; an error: not known.
type AcceptedStore interface {
	Accepted(ctx context.Context, merchant string) (bool, error)
	Accept(ctx context.Context, merchant string) error
	Forget(ctx context.Context, merchant string) error
}

// UnacceptedConfig bounds unaccepted pairs; CallsPerSecond 0 turns it off
// (every pair a merchant).
type UnacceptedConfig struct {
	CallsPerSecond      int           // the replica's shared budget (burst: twice)
	MaxInFlight         int           // unaccepted pairs' calls at once (0: the default); a call waits for one
	PerAddressPerSecond int           // a client address's budget (burst: twice; MaxInFlight/4 at once); 0: none
	RefusedTTL          time.Duration // how long the negative cache answers a refused pair; 0: DefaultRefusedTTL
	MaxAccepted         int           // bounds the accepted pairs kept in memory; 0: the default
	Store               AcceptedStore // when set, shares the accepted pairs with the other replicas
}

// gate applies UnacceptedConfig; see the file comment.
type gate struct {
	shared     *ratelimit.Limiter // key sharedBudgetKey
	perAddress *ratelimit.Limiter // keys addressBudgetKey + address; nil: none
	addrSlots  int
	slots      chan struct{}
	refusedTTL time.Duration
	store      AcceptedStore
	now        func() time.Time
	accepted   *lru.Cache[merchantKey, struct{}]

	mu       sync.Mutex
	refused  *simplelru.LRU[merchantKey, refusal] // in refusal order (Peek): past its bound the first to expire goes
	probes   map[merchantKey]chan struct{}
	inFlight map[string]int // probes per client address
}

// refusal answers a refused pair until a UnixNano time: the REST API's
// (gate.refused) or the gate's.
type refusal struct {
	err   *Error
	until int64
}

func newGate(cfg UnacceptedConfig) (*gate, error) {
	if cfg.CallsPerSecond <= 0 {
		return nil, nil
	}
	inflight := positiveOr(cfg.MaxInFlight, DefaultUnacceptedMaxInFlight)
	shared, err := perSecond(cfg.CallsPerSecond)
	if err != nil {
		return nil, err
	}
	g := &gate{
		shared:     shared,
		slots:      make(chan struct{}, inflight),
		refusedTTL: positiveOr(cfg.RefusedTTL, DefaultRefusedTTL),
		store:      cfg.Store,
		now:        time.Now,
		probes:     make(map[merchantKey]chan struct{}),
		inFlight:   make(map[string]int),
	}
	g.accepted, _ = lru.New[merchantKey, struct{}](positiveOr(cfg.MaxAccepted, DefaultMaxAccepted)) // a positive size never fails
	g.refused, _ = simplelru.NewLRU[merchantKey, refusal](maxRefused, nil)
	if cfg.PerAddressPerSecond > 0 {
		// A Limiter of its own: ratelimit's rate is one per Limiter.
		if g.perAddress, err = perSecond(cfg.PerAddressPerSecond); err != nil {
			return nil, err
		}
		g.addrSlots = max(1, inflight/4)
	}
	return g, nil
}

// perSecond is a budget of n calls a second (clamped for ratelimit.New), burst
// 2n.
func perSecond(n int) (*ratelimit.Limiter, error) {
	n = min(n, 1e8)
	return ratelimit.New(ratelimit.Config{RESTCallsPerSecond: n, RESTBurst: 2 * n})
}

// ticket is a probe's turn, address count and slot; end, idempotent, frees
// them and wakes the waiters.
type ticket struct {
	g    *gate
	key  merchantKey
	done chan struct{}
	addr string
	slot bool
	over atomic.Bool // ended
}

func (t *ticket) end() {
	if t == nil || !t.over.CompareAndSwap(false, true) {
		return
	}
	g := t.g
	g.mu.Lock()
	if g.probes[t.key] == t.done {
		delete(g.probes, t.key)
	}
	if t.addr != "" {
		if n := g.inFlight[t.addr] - 1; n > 0 {
			g.inFlight[t.addr] = n
		} else {
			delete(g.inFlight, t.addr)
		}
	}
	g.mu.Unlock()
	close(t.done)
	if t.slot {
		<-g.slots
	}
}

// admit lets a call of cv's pair go: at once if accepted (nil ticket), as its
// probe, or not (an error).
func (g *gate) admit(ctx context.Context, cv *credentialsValue) (_ *ticket, err error) {
	if d := cv.denied.Load(); d != nil && g.now().UnixNano() < d.until {
		return nil, d.err // a call of this request was refused already
	}
	defer func() { g.remember(cv, err) }()
	k := cv.merchant
	for {
		if g.acceptedHere(cv) {
			return nil, nil
		}
		now := g.now().UnixNano()
		g.mu.Lock()
		if r, ok := g.refused.Peek(k); ok {
			if now < r.until {
				g.mu.Unlock()
				return nil, r.err
			}
			g.refused.Remove(k)
		}
		if wait := g.probes[k]; wait != nil {
			g.mu.Unlock()
			select {
			case <-wait: // the probe's outcome is known: look again
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			continue
		}
		addr := clientAddr(ctx)
		t := &ticket{g: g, key: k, done: make(chan struct{})}
		if g.perAddress != nil {
			if g.inFlight[addr] >= g.addrSlots {
				g.mu.Unlock()
				return nil, unacceptedLimited(time.Second)
			}
			g.inFlight[addr]++
			t.addr = addr
		}
		g.probes[k] = t.done
		g.mu.Unlock()
		// The probe: unless the store knows the pair, charged to the budgets,
		// with a slot.
		if g.askStore(ctx, cv) {
			t.end()
			return nil, nil
		}
		err = g.budgets(ctx, addr, (*ratelimit.Limiter).AllowRESTCalls)
		if err == nil {
			err = take(ctx, g.slots)
		}
		if err != nil {
			t.end()
			return nil, err
		}
		t.slot = true
		return t, nil
	}
}

// remember keeps a refusal (an *Error in err, maybe nil) in cv for its
// Retry-After, at least 1s.
func (g *gate) remember(cv *credentialsValue, err error) {
	if e, ok := errors.AsType[*Error](err); ok {
		cv.denied.Store(&refusal{err: e, until: g.now().UnixNano() + int64(max(e.RetryAfter, time.Second))})
	}
}

// budgets asks addr's budget and the shared one for a call (AllowRESTCalls or
// PeekRESTCalls).
func (g *gate) budgets(ctx context.Context, addr string, ask func(*ratelimit.Limiter, context.Context, string, int) ratelimit.Decision) error {
	if g.perAddress != nil {
		if d := ask(g.perAddress, ctx, addressBudgetKey+addr, 1); !d.Allowed {
			return unacceptedLimited(d.RetryAfter)
		}
	}
	if d := ask(g.shared, ctx, sharedBudgetKey, 1); !d.Allowed {
		return unacceptedLimited(d.RetryAfter)
	}
	return nil
}

// Admit tells, charging nothing, the error the pair's first call would get now
// (an operation refused before any field runs); nil if accepted, a call is
// under way, or no bounds or pair.
func (c *Client) Admit(ctx context.Context) (err error) {
	g := c.limiter.gate
	cv, ok := credentialsFrom(ctx)
	if g == nil || !ok || g.known(ctx, cv) {
		return nil
	}
	defer func() { g.remember(cv, err) }()
	k := cv.merchant
	now := g.now().UnixNano()
	if d := cv.denied.Load(); d != nil && now < d.until {
		return d.err
	}
	addr := clientAddr(ctx)
	g.mu.Lock()
	if r, ok := g.refused.Peek(k); ok && now < r.until {
		g.mu.Unlock()
		return r.err
	}
	busy := g.probes[k] != nil
	full := g.perAddress != nil && g.inFlight[addr] >= g.addrSlots
	g.mu.Unlock()
	switch {
	case busy:
		return nil
	case full:
		return unacceptedLimited(time.Second)
	}
	return g.budgets(ctx, addr, (*ratelimit.Limiter).PeekRESTCalls)
}

// Merchant is who ctx's request is for the edge's budgets: the pair's merchant
// (MerchantOf) once the REST API has accepted it on any replica (or without
// bounds); ok false (anonymous) otherwise.
func (c *Client) Merchant(ctx context.Context) (string, bool) {
	cv, ok := credentialsFrom(ctx)
	if !ok || (c.limiter.gate != nil && !c.limiter.gate.known(ctx, cv)) {
		return "", false
	}
	return cv.merchantName, true
}

// Refused reports whether the REST API refused ctx's pair (401, 403) on a call
// of ctx, with bounds on.
func Refused(ctx context.Context) bool {
	cv, ok := credentialsFrom(ctx)
	return ok && cv.refused.Load()
}

// Accepted reports whether ctx's pair is known here to be a merchant (answered
// 2xx, or no bounds).
func (c *Client) Accepted(ctx context.Context) bool {
	cv, ok := credentialsFrom(ctx)
	return ok && c.limiter.gate.acceptedHere(cv)
}

// acceptedHere: cv's pair is accepted in this replica's memory (cv's or the
// table); nil g: all are.
func (g *gate) acceptedHere(cv *credentialsValue) bool {
	if g == nil || cv.accepted.Load() {
		return true
	}
	if _, ok := g.accepted.Get(cv.merchant); ok {
		cv.accepted.Store(true)
		return true
	}
	return false
}

// known: cv's pair is accepted here or, unless refused on this context, in the
// store.
func (g *gate) known(ctx context.Context, cv *credentialsValue) bool {
	return g.acceptedHere(cv) || (!cv.refused.Load() && g.askStore(ctx, cv))
}

// askStore asks the store about cv's pair, once per context, accepting it if
// known.
func (g *gate) askStore(ctx context.Context, cv *credentialsValue) bool {
	if g.store == nil || cv.storeAsked.Load() {
		return false
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	ok, err := g.store.Accepted(sctx, cv.merchantName)
	cancel()
	if err == nil && ok {
		_, _ = g.accepted.ContainsOrAdd(cv.merchant, struct{}{})
		cv.accepted.Store(true)
		return true
	}
	cv.storeAsked.Store(true)
	return false
}

// unacceptedLimited is the refusal of a call over the budgets.
func unacceptedLimited(after time.Duration) *Error {
	secs := int((max(after, time.Second) + time.Second - 1) / time.Second)
	return &Error{Kind: KindRateLimited, Message: msgUnacceptedLimited + strconv.Itoa(secs) + " s", RetryAfter: time.Duration(secs) * time.Second}
}

// report records a call's answer (nil g: not): a success accepts cv's pair; a
// 401 or 403 refuses it for RefusedTTL, forgetting it if accepted (a revoked
// key).
func (g *gate) report(ctx context.Context, cv *credentialsValue, err error) {
	if g == nil {
		return
	}
	if err == nil {
		if cv.accepted.Swap(true) {
			return
		}
		if known, _ := g.accepted.ContainsOrAdd(cv.merchant, struct{}{}); !known && g.store != nil {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
			_ = g.store.Accept(sctx, cv.merchantName)
			cancel()
		}
		return
	}
	e, ok := errors.AsType[*Error](err)
	if !ok || (e.Status != 401 && e.Status != 403) {
		return
	}
	k := cv.merchant
	cv.accepted.Store(false)
	cv.refused.Store(true)
	if g.accepted.Remove(k) && g.store != nil {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
		_ = g.store.Forget(sctx, cv.merchantName)
		cancel()
	}
	r := refusal{err: &Error{Kind: e.Kind, Status: e.Status, Message: e.Message}, until: g.now().UnixNano() + int64(g.refusedTTL)}
	g.mu.Lock()
	g.refused.Add(k, r)
	g.mu.Unlock()
}

type clientAddrKey struct{}

// WithClientAddr returns a context whose unaccepted pair's calls are charged
// to addr (AddressKey).
func WithClientAddr(ctx context.Context, addr netip.Addr) context.Context {
	return opscope.WithValue(ctx, clientAddrKey{}, AddressKey(addr))
}

// clientAddr is the budget key WithClientAddr put in ctx (never "").
func clientAddr(ctx context.Context) string {
	a, _ := ctx.Value(clientAddrKey{}).(string)
	return cmp.Or(a, unknownAddressKey)
}

// AddressKey is addr's budget key: the IPv4 address, or the IPv6 /64 (one host
// often has a /64).
func AddressKey(addr netip.Addr) string {
	addr = addr.Unmap()
	switch {
	case !addr.IsValid():
		return unknownAddressKey
	case addr.Is4():
		return addr.String()
	}
	p, _ := addr.Prefix(64)
	return p.String()
}
