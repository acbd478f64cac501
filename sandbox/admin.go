// The admin endpoint changes a payment's status, so that tests and the demo
// can watch a payment move; it is not a REST route, so the gateway never calls it.

package sandbox

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"time"
)

// Admin routes, under AdminPrefix: not recorded, delayed or faulted, so that
// a test's REST call counts and fault plans stay the REST API's.
const (
	AdminPrefix             = "/sandbox/"
	AdminRoutePaymentStatus = "/sandbox/payments/{id}/status"
	AdminRouteSessionStatus = "/sandbox/checkout/sessions/{id}/status"
)

const maxAdminBodyBytes = 1 << 10

// Errors of SetPaymentStatus and SetCheckoutSessionStatus.
var (
	ErrUnknownBusiness = errors.New("sandbox: no business has this API key")
	ErrPaymentNotFound = errors.New("sandbox: payment not found")
	ErrSessionNotFound = errors.New("sandbox: checkout session not found")
	ErrInvalidStatus   = errors.New("sandbox: not a payment status")
)

// SetPaymentStatus sets the status of the business's payment id (one of
// Statuses, in any order). The change shows in the payment's status and
// updated_at (always later), the list's status filter, and its checkout
// sessions (SUCCEEDED for a REFUNDED payment); the same status changes nothing.
func (s *Server) SetPaymentStatus(apiKey, id, status string) error {
	b, err := s.statusTarget(apiKey, status)
	if err != nil {
		return err
	}
	i, ok := b.paymentPos[id]
	if !ok {
		return ErrPaymentNotFound
	}
	s.data.Lock()
	defer s.data.Unlock()
	b.setPaymentStatus(i, status, time.Now())
	return nil
}

// SetCheckoutSessionStatus is SetPaymentStatus for the payment behind the
// business's checkout session idOrReference (its id or its reference).
func (s *Server) SetCheckoutSessionStatus(apiKey, idOrReference, status string) error {
	b, err := s.statusTarget(apiKey, status)
	if err != nil {
		return err
	}
	s.data.Lock()
	defer s.data.Unlock()
	k := slices.IndexFunc(b.sessions, func(c CheckoutSession) bool {
		return c.ID == idOrReference || c.Reference == idOrReference
	})
	if k < 0 {
		return ErrSessionNotFound
	}
	i, ok := b.paymentPos[b.sessions[k].PaymentID]
	if !ok {
		return ErrPaymentNotFound // not with generated data: every session has its payment
	}
	b.setPaymentStatus(i, status, time.Now())
	return nil
}

// statusTarget is the business of apiKey, when status is a payment status.
func (s *Server) statusTarget(apiKey, status string) (*business, error) {
	switch b := s.byKey[apiKey]; {
	case b == nil:
		return nil, ErrUnknownBusiness
	case !slices.Contains(Statuses(), status):
		return nil, ErrInvalidStatus
	default:
		return b, nil
	}
}

// setPaymentStatus changes payment i and its sessions; s.data is held for
// writing. Bodies are replaced, never changed in place: handlers write them unlocked.
func (b *business) setPaymentStatus(i int, status string, now time.Time) {
	p := &b.payments[i]
	if p.Status == status {
		return
	}
	old := p.Status
	p.Status = status
	p.UpdatedAt = laterTimestamp(p.UpdatedAt, now)
	b.putPayment(i)

	if k, found := slices.BinarySearch(b.statusPos[old], i); found {
		b.statusPos[old] = slices.Delete(b.statusPos[old], k, k+1)
	}
	k, _ := slices.BinarySearch(b.statusPos[status], i)
	b.statusPos[status] = slices.Insert(b.statusPos[status], k, i)

	for j := range b.sessions {
		cs := &b.sessions[j]
		if cs.PaymentID != p.ID {
			continue
		}
		cs.setStatus(status)
		cs.UpdatedAt = p.UpdatedAt
		b.putSession(*cs)
	}
}

// laterTimestamp renders now, or prev + 1 ms when now is not after it: updated_at only moves forward.
func laterTimestamp(prev string, now time.Time) string {
	t := now.UTC().Truncate(time.Millisecond)
	if p, err := time.Parse(TimeLayout, prev); err == nil && !t.After(p) {
		t = p.Add(time.Millisecond)
	}
	return t.Format(TimeLayout)
}

// serveAdmin answers under AdminPrefix in the REST API's order (route ->
// method -> credentials -> body -> lookup) with the changed resource's retrieve form.
//
//	POST /sandbox/payments/{id}/status             {"status":"SUCCEEDED"}
//	POST /sandbox/checkout/sessions/{id}/status    {"status":"REFUNDED"}   (id or reference)
func (s *Server) serveAdmin(w http.ResponseWriter, r *http.Request) {
	route, id, ok := matchRoute(r.URL.EscapedPath(), AdminRoutePaymentStatus, AdminRouteSessionStatus)
	if !ok {
		writeJSON(w, http.StatusNotFound, bodyNotFound)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeJSON(w, http.StatusMethodNotAllowed, bodyMethodNotAllowed)
		return
	}
	b, _ := s.authenticate(w, r)
	if b == nil {
		return
	}
	var in struct {
		Status string `json:"status"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxAdminBodyBytes))
	if err := dec.Decode(&in); err != nil || dec.More() {
		writeJSON(w, http.StatusBadRequest, bodyInvalidBody)
		return
	}

	set, changed := s.SetPaymentStatus, func() []byte { return b.detailJSON[b.paymentPos[id]] }
	if route == AdminRouteSessionStatus {
		set, changed = s.SetCheckoutSessionStatus, func() []byte { return b.sessionJSON[id] }
	}
	if err := set(b.info.APIKey, id, in.Status); err != nil {
		status, body := http.StatusInternalServerError, bodyInternal
		switch err {
		case ErrInvalidStatus:
			status, body = http.StatusBadRequest, bodyInvalidStatus
		case ErrPaymentNotFound:
			status, body = http.StatusNotFound, bodyPaymentNotFound
		case ErrSessionNotFound:
			status, body = http.StatusNotFound, bodySessionNotFound
		}
		writeJSON(w, status, body)
		return
	}

	s.data.RLock()
	out := changed()
	s.data.RUnlock()
	writeJSON(w, http.StatusOK, out)
}
