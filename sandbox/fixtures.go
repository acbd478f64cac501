package sandbox

// Fixture is one business's example ids (the README's queries, the gateway's banner and -fixtures).
type Fixture struct {
	Business  Business
	PaymentID string // the business's newest payment (the first of its list)
	// PendingPaymentID is its newest payment generated PENDING: one to watch
	// with paymentUpdated and change (a settled one would complete at once).
	PendingPaymentID string
	PaymentLinkID    string // its first payment link
	// CheckoutReference and CheckoutSessionID name its first checkout
	// session (nothing lists sessions).
	CheckoutReference string
	CheckoutSessionID string
}

// Fixtures returns each business's example ids, in Businesses order, chosen
// from the generated data so they cannot drift from it (status changes keep them).
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
