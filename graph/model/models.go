// Package model holds the Go types behind the GraphQL schema (models_gen.go
// is gqlgen's): each here embeds its REST record, so gqlgen binds the
// fields the schema keeps straight to it, with methods only where the
// schema's shape is its own.
package model

import (
	"context"
	"time"

	"paygraph/graph/relay"
	"paygraph/restclient"
)

// Money is an exact amount with its currency.
type Money struct {
	Amount   restclient.Paisa
	Currency string
}

// gqlgen.yml binds the hot fields of Payment and Money to the Ref methods:
// gqlgen boxes every value in `any` twice, which allocates for a string,
// time, int64 or struct but not for a pointer into the record.

func (m *Money) AmountRef() *restclient.Paisa { return &m.Amount }
func (m *Money) PaisaRef() *int64             { return (*int64)(&m.Amount) }
func (m *Money) CurrencyRef() *string         { return &m.Currency }

// Customer is the customer block of a payment or checkout session.
// AddressOf names the payment whose detail holds the address of a list
// item's customer (the REST list omits it); "" when Address is authoritative.
type Customer struct {
	restclient.Customer
	AddressOf string
	ListItem  *restclient.Payment // the list item AddressOf came from, for the REST-call plan
}

// Payment is a payment record, its amount and customer built with it
// rather than at every field read.
type Payment struct {
	*restclient.Payment
	amount   Money
	customer Customer
}

// NewPayment binds a REST payment to the schema.
func NewPayment(p *restclient.Payment) *Payment {
	m := new(Payment)
	m.Bind(p)
	return m
}

// Bind makes m p's binding, as NewPayment does (for payments allocated
// together); a list item's customer remembers its payment.
func (m *Payment) Bind(p *restclient.Payment) {
	*m = Payment{
		Payment:  p,
		amount:   Money{Amount: p.Amount, Currency: p.Currency},
		customer: Customer{Customer: p.Customer},
	}
	if !p.Detailed {
		m.customer.AddressOf, m.customer.ListItem = p.ID, p
	}
}

// Node, and Entity: a federation entity in the subgraph mode (federation.graphqls).
func (*Payment) IsNode()           {}
func (*Payment) IsEntity()         {}
func (*PaymentLink) IsNode()       {}
func (*PaymentLink) IsEntity()     {}
func (*CheckoutSession) IsEntity() {}

// Customer is the payment's customer, built with it.
func (p *Payment) Customer() *Customer { return &p.customer }

// DeferrableCustomer is Payment.customer for gqlgen: it takes a context
// only because gqlgen defers just the fields it resolves concurrently, and
// is a method, not a resolver, to have no resolver span (graph/gen's
// notBlocking keeps lists of it sequential).
func (p *Payment) DeferrableCustomer(context.Context) *Customer { return &p.customer }

// The Ref methods of Payment (see Money's).
func (p *Payment) IDRef() *string            { return &p.ID }
func (p *Payment) StatusRef() *PaymentStatus { return (*PaymentStatus)(&p.Payment.Status) }
func (p *Payment) AmountRef() *Money         { return &p.amount }
func (p *Payment) CreatedAtRef() *time.Time  { return &p.CreatedAt }
func (p *Payment) UpdatedAtRef() *time.Time  { return &p.UpdatedAt }

// PaymentLink is a shareable payment link.
type PaymentLink struct{ *restclient.PaymentLink }

// NewPaymentLink binds a REST payment link to the schema.
func NewPaymentLink(l *restclient.PaymentLink) *PaymentLink { return &PaymentLink{l} }

func (l *PaymentLink) Amount() Money {
	return Money{Amount: l.PaymentLink.Amount, Currency: l.Currency}
}

// CheckoutSession is a checkout session; its payment is loaded from PaymentID.
type CheckoutSession struct {
	*restclient.CheckoutSession
	// LivePayment, when not nil, is the payment a subscription's poll
	// fetched with it, answered instead of the request's cached loader.
	LivePayment *restclient.Payment
	// AskedAs is the id or reference asked for, naming its payment join
	// in the REST-call plan.
	AskedAs string
}

// NewCheckoutSession binds a REST checkout session to the schema.
func NewCheckoutSession(s *restclient.CheckoutSession) *CheckoutSession {
	return &CheckoutSession{CheckoutSession: s}
}

// SessionID is the session's REST id, named sessionId so that no Relay
// store takes it for a payment's id.
func (s *CheckoutSession) SessionID() string { return s.ID }

func (s *CheckoutSession) Amount() Money {
	return Money{Amount: s.CheckoutSession.Amount, Currency: s.Currency}
}

func (s *CheckoutSession) Subtotal() Money {
	return Money{Amount: s.CheckoutSession.Subtotal, Currency: s.Currency}
}

// Customer is the session's customer (with its address: sessions carry it).
func (s *CheckoutSession) Customer() *Customer {
	return &Customer{Customer: s.CheckoutSession.Customer}
}

// PaymentEdge is one edge of a payments connection, its cursor encoded
// (signed by Cursors) only when asked for.
type PaymentEdge struct {
	Node    *Payment
	After   relay.Position
	Cursors *relay.Signer
}

// SetCursors sets the page info's start and end cursors from the edges.
func (c *PaymentConnection) SetCursors() {
	if n := len(c.Edges); n > 0 && c.PageInfo != nil && c.PageInfo.StartCursor == nil {
		start, end := c.Edges[0].Cursor(), c.Edges[n-1].Cursor()
		c.PageInfo.StartCursor, c.PageInfo.EndCursor = &start, &end
	}
}

// Cursor is the opaque position right after this edge.
func (e *PaymentEdge) Cursor() string { return e.Cursors.Encode(e.After) }
