package sessiontoken

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
)

// ScopeKind names what a token may read.
type ScopeKind string

// The kinds of scope, as spelled in the token endpoint's JSON.
const (
	// ScopeAll: every read of the merchant (what the two headers give).
	ScopeAll ScopeKind = "all"
	// ScopeCheckoutSession: one checkout session (by id or reference) and its payment; nothing else.
	ScopeCheckoutSession ScopeKind = "checkoutSession"
	// ScopePayment: one payment; nothing else.
	ScopePayment ScopeKind = "payment"
)

// MaxIDBytes bounds a scope's id and the session ids a token carries, keeping tokens small.
const MaxIDBytes = 128

// Scope is what a token may read; the zero Scope allows nothing. A checkout-session scope knows the
// session by the name it was minted with, and its other names once pinned at minting or learned
// (LearnCheckoutSession) by the Scope Verify returned and its copies. Safe for concurrent use.
type Scope struct {
	kind     ScopeKind
	id       string        // as minted: payment id, or checkout session id or reference
	facts    *sessionFacts // checkout-session scopes only
	customer CustomerData  // customerdata.go
}

// CheckoutSessionIDs name one checkout session: its id, its reference (either
// retrieves it), its payment's id.
type CheckoutSessionIDs struct {
	ID        string `json:"sessionId"`
	Reference string `json:"reference"`
	PaymentID string `json:"paymentId"`
}

// sessionFacts are the CheckoutSessionIDs of a checkout-session scope, once known.
type sessionFacts struct {
	mu    sync.RWMutex
	known bool
	ids   CheckoutSessionIDs
}

// AllReads is the scope of every read of the merchant.
func AllReads() Scope { return Scope{kind: ScopeAll, customer: defaultCustomerData} }

// OneCheckoutSession is the scope of the checkout session idOrRef (id or reference) and its payment.
func OneCheckoutSession(idOrRef string) (Scope, error) {
	return NewScope(ScopeCheckoutSession, idOrRef)
}

// OnePayment is the scope of the payment id.
func OnePayment(id string) (Scope, error) { return NewScope(ScopePayment, id) }

// NewScope returns the scope of kind over id, at the default customer-data
// level. "all" takes no id; the others need 1..MaxIDBytes letters, digits, '_'
// or '-' (the REST id alphabet).
func NewScope(kind ScopeKind, id string) (Scope, error) {
	switch kind {
	case ScopeAll:
		if id != "" {
			return Scope{}, errors.New(`scope "all" takes no id`)
		}
		return AllReads(), nil
	case ScopeCheckoutSession, ScopePayment:
		if err := checkID(id); err != nil {
			return Scope{}, fmt.Errorf("scope %q: id %w", kind, err)
		}
		s := Scope{kind: kind, id: id, customer: defaultCustomerData}
		if kind == ScopeCheckoutSession {
			s.facts = &sessionFacts{}
		}
		return s, nil
	default:
		return Scope{}, fmt.Errorf(`unknown scope kind: want "all", "checkoutSession" or "payment"`)
	}
}

// checkID tells why id could not be a REST id or reference, or nil.
func checkID(id string) error {
	switch {
	case id == "":
		return errors.New("is missing")
	case len(id) > MaxIDBytes:
		return fmt.Errorf("is longer than %d bytes", MaxIDBytes)
	case !isBase64URL(id):
		return errors.New("may hold only letters, digits, '_' and '-'")
	}
	return nil
}

// Kind is the scope's kind ("" for the zero Scope).
func (s Scope) Kind() ScopeKind { return s.kind }

// ID is the id the scope was minted with ("" for "all").
func (s Scope) ID() string { return s.id }

// String is "all", "payment:<id>" or "checkoutSession:<id>": loggable.
func (s Scope) String() string {
	switch s.kind {
	case ScopeAll:
		return string(ScopeAll)
	case "":
		return "none"
	}
	return string(s.kind) + ":" + s.id
}

// AllowsList tells whether the token may list payments (Query.payments).
func (s Scope) AllowsList() bool { return s.kind == ScopeAll }

// AllowsPaymentLink tells whether the token may read the payment link id (only "all" may).
func (s Scope) AllowsPaymentLink(id string) bool { return s.kind == ScopeAll && id != "" }

// AllowsPayment tells whether the token may read the payment id: "all", the payment scope's own,
// or a checkout scope's session's once known.
func (s Scope) AllowsPayment(id string) bool {
	switch {
	case id == "":
		return false
	case s.kind == ScopeAll:
		return true
	case s.kind == ScopePayment:
		return id == s.id
	case s.kind == ScopeCheckoutSession:
		ids, ok := s.facts.get()
		return ok && id == ids.PaymentID
	}
	return false
}

// AllowsCheckoutSession tells whether the token may read the checkout session idOrRef: "all", or a
// checkout scope's session by either name once known.
func (s Scope) AllowsCheckoutSession(idOrRef string) bool {
	switch {
	case idOrRef == "":
		return false
	case s.kind == ScopeAll:
		return true
	case s.kind == ScopeCheckoutSession:
		if idOrRef == s.id {
			return true
		}
		ids, ok := s.facts.get()
		return ok && (idOrRef == ids.ID || idOrRef == ids.Reference)
	}
	return false
}

// SessionToLearn returns the name of the scope's checkout session while its other names are
// unknown, for a refused resolver to learn them and ask again.
func (s Scope) SessionToLearn() (idOrRef string, ok bool) {
	if _, known := s.facts.get(); s.kind != ScopeCheckoutSession || known {
		return "", false
	}
	return s.id, true
}

// LearnCheckoutSession records the names of the scope's checkout session as the resolvers fetched
// it (true); any other is refused (false); "all": true.
func (s Scope) LearnCheckoutSession(ids CheckoutSessionIDs) bool {
	switch s.kind {
	case ScopeAll:
		return true
	case ScopeCheckoutSession:
		return s.facts.learn(s.id, ids)
	}
	return false
}

// withSession returns s with the session's names pinned, or an error when ids are not the session's.
func (s Scope) withSession(ids CheckoutSessionIDs) (Scope, error) {
	if s.kind != ScopeCheckoutSession {
		return s, nil
	}
	if err := checkSessionIDs(s.id, ids); err != nil {
		return Scope{}, err
	}
	return Scope{kind: s.kind, id: s.id, facts: &sessionFacts{known: true, ids: ids}, customer: s.customer}, nil
}

// checkSessionIDs tells why ids cannot be the names of the session idOrRef.
func checkSessionIDs(idOrRef string, ids CheckoutSessionIDs) error {
	for _, id := range []string{ids.ID, ids.Reference, ids.PaymentID} {
		if err := checkID(id); err != nil {
			return fmt.Errorf("checkout session ids: an id %w", err)
		}
	}
	if idOrRef != ids.ID && idOrRef != ids.Reference {
		return errors.New("checkout session ids: neither the id nor the reference is the scope's")
	}
	return nil
}

func (f *sessionFacts) get() (CheckoutSessionIDs, bool) {
	if f == nil {
		return CheckoutSessionIDs{}, false
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.ids, f.known
}

func (f *sessionFacts) learn(idOrRef string, ids CheckoutSessionIDs) bool {
	if f == nil || checkSessionIDs(idOrRef, ids) != nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.known {
		return f.ids == ids // the same session; never overwritten
	}
	f.ids, f.known = ids, true
	return true
}

// scopeJSON is a scope in the token endpoint's JSON.
type scopeJSON struct {
	Kind ScopeKind `json:"kind"`
	ID   string    `json:"id,omitempty"`
}

// MarshalJSON writes {"kind": ..., "id": ...}.
func (s Scope) MarshalJSON() ([]byte, error) { return json.Marshal(scopeJSON{Kind: s.kind, ID: s.id}) }

// UnmarshalJSON reads {"kind": ..., "id": ...}, refusing other fields and anything NewScope refuses.
func (s *Scope) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var j scopeJSON
	if err := dec.Decode(&j); err != nil {
		return fmt.Errorf(`scope is not {"kind": ..., "id": ...}: %w`, err)
	}
	v, err := NewScope(j.Kind, j.ID)
	if err == nil {
		*s = v
	}
	return err
}
