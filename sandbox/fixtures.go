package sandbox

// Fixture is one business's example ids: what a newcomer pastes into the
// README's queries (the README's "Try it" table, the gateway's banner and
// its -fixtures flag all print these).
type Fixture struct {
	Business Business
	// PaymentID is the business's newest payment (the first of its list).
	PaymentID string
	// PendingPaymentID is its newest payment generated PENDING: the one to
	// watch with a paymentUpdated subscription and to change (a payment
	// already settled would complete the subscription at once).
	PendingPaymentID string
	// PaymentLinkID is its first payment link.
	PaymentLinkID string
	// CheckoutReference is the reference of its first checkout session
	// (a session can be retrieved by it, and nothing else lists it);
	// CheckoutSessionID is that session's id.
	CheckoutReference string
	CheckoutSessionID string
}

// Fixtures returns each business's example ids, in Businesses order. They
// are chosen from the generated data, never written down elsewhere, so
// that they cannot drift from it: the same seed gives the same ids on
// every machine, and a status change (admin.go) changes none of them.
func (s *Server) Fixtures() []Fixture {
	out := make([]Fixture, len(s.businesses))
	s.data.RLock()
	defer s.data.RUnlock()
	for i, b := range s.businesses {
		out[i] = Fixture{
			Business:          b.info,
			PaymentID:         b.payments[0].ID,
			PendingPaymentID:  b.pendingID,
			PaymentLinkID:     b.links[0].ID,
			CheckoutReference: b.sessions[0].Reference,
			CheckoutSessionID: b.sessions[0].ID,
		}
	}
	return out
}
