package graph

// What a session token lets the caller read, checked by every resolver
// before any REST call: a field outside the scope answers FORBIDDEN.

import (
	"context"
	"paygraph/graph/errcode"
	"paygraph/graph/loaders"

	"paygraph/internal/opscope"
	"paygraph/restclient"
	"paygraph/sessiontoken"
)

// Scope is what the caller may read (sessiontoken.Scope); a request without
// one (the credential headers) reads everything. Its methods must be safe
// for concurrent use.
type Scope interface {
	AllowsList() bool
	AllowsPayment(id string) bool
	AllowsPaymentLink(id string) bool
	AllowsCheckoutSession(idOrRef string) bool
	// SessionToLearn names the scope's own checkout session while its other
	// names (id or reference, payment id) are not known.
	SessionToLearn() (idOrRef string, ok bool)
	// LearnCheckoutSession is told the names of every session fetched.
	LearnCheckoutSession(ids sessiontoken.CheckoutSessionIDs) bool
	// CustomerData is how much customer data the token reads.
	CustomerData() sessiontoken.CustomerData
}

var _ Scope = sessiontoken.Scope{}

type scopeKey struct{}

// WithScope returns ctx carrying s, for the resolvers.
func WithScope(ctx context.Context, s Scope) context.Context {
	return opscope.WithValue(ctx, scopeKey{}, s)
}

// scopeFrom returns the request's Scope (graphTail's, in an operation);
// ok false: no token, all reads.
func scopeFrom(ctx context.Context) (Scope, bool) {
	if c := callerOf(ctx); c != nil {
		return c.scope, c.hasScope
	}
	return scopeIn(ctx)
}

// scopeIn is the Scope ctx holds (scopeFrom without the operation's).
func scopeIn(ctx context.Context) (Scope, bool) {
	s, ok := ctx.Value(scopeKey{}).(Scope)
	return s, ok && s != nil
}

// ScopeError is a field outside the session token's scope (FORBIDDEN).
type ScopeError struct{ What string }

func (*ScopeError) ErrorCode() string { return errcode.Forbidden }

func (e *ScopeError) Error() string {
	return "this session token's scope does not include " + e.What
}

// allow answers nil when the request may read what allowed checks, else a
// ScopeError naming what+id. When learnable (a payment or a session) and
// the token lacks its session's names, its session is read first to learn
// them; every other refusal costs no REST call.
func (r *Resolver) allow(ctx context.Context, learnable bool, allowed func(Scope) bool, what, id string) error {
	s, ok := scopeFrom(ctx)
	if !ok || allowed(s) {
		return nil
	}
	if ref, ok := s.SessionToLearn(); ok && learnable {
		if cs, err := loaders.For(ctx).CheckoutSession(ctx, ref); err == nil {
			learnSession(s, cs)
			if allowed(s) {
				return nil
			}
		}
	}
	return &ScopeError{What: what + id}
}

// learn tells the request's scope, if any, the names of a session fetched.
func learn(ctx context.Context, cs *restclient.CheckoutSession) {
	if s, ok := scopeFrom(ctx); ok {
		learnSession(s, cs)
	}
}

func learnSession(s Scope, cs *restclient.CheckoutSession) {
	s.LearnCheckoutSession(sessiontoken.CheckoutSessionIDs{ID: cs.ID, Reference: cs.Reference, PaymentID: cs.PaymentID})
}
