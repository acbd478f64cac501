package restclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The wire structs mirror the REST JSON: amounts are json.Number (never a
// float), nullable fields pointers; conversion errors never quote body values.
// wirefast.go knows wirePayment's and wirePage's.

// errField captures a string "error" key; any other JSON type is ignored.
type errField struct {
	msg string
	set bool
}

func (f *errField) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &f.msg); err == nil {
			f.set = true
		}
	}
	return nil
}

type wireCustomer struct {
	Name    *string `json:"name"`
	Email   *string `json:"email"`
	Phone   *string `json:"phone"`
	Address *string `json:"address"`
	City    *string `json:"city"`
}

type wirePayment struct {
	ID            string       `json:"id"`
	Status        string       `json:"status"`
	Amount        json.Number  `json:"amount"`
	Currency      *string      `json:"currency"`
	TransactionID *string      `json:"transaction_id"`
	PaymentMethod *string      `json:"payment_method"`
	Customer      wireCustomer `json:"customer"`
	CreatedAt     string       `json:"created_at"`
	UpdatedAt     string       `json:"updated_at"`
	Error         errField     `json:"error"`
	// strings, when set, holds the first nullable strings (wirefast.go).
	strings *[firstStringBlock]string
}

func (w *wirePayment) errorBody() (string, bool) { return w.Error.msg, w.Error.set && w.ID == "" }

type wirePage struct {
	Data       []wirePayment `json:"data"`
	HasMore    bool          `json:"has_more"`
	NextCursor *string       `json:"next_cursor"`
	Error      errField      `json:"error"`
}

func (w *wirePage) errorBody() (string, bool) { return w.Error.msg, w.Error.set && w.Data == nil }

type wireLink struct {
	ID          string       `json:"id"`
	URL         string       `json:"url"`
	Slug        string       `json:"slug"`
	Title       string       `json:"title"`
	Description *string      `json:"description"`
	Amount      json.Number  `json:"amount"`
	Currency    *string      `json:"currency"`
	IsReusable  bool         `json:"is_reusable"`
	IsActive    bool         `json:"is_active"`
	CurrentUses json.Number  `json:"current_uses"`
	MaxUses     *json.Number `json:"max_uses"`
	ExpiresAt   *string      `json:"expires_at"`
	SuccessURL  *string      `json:"success_url"`
	CreatedAt   string       `json:"created_at"`
	UpdatedAt   string       `json:"updated_at"`
	Error       errField     `json:"error"`
}

func (w *wireLink) errorBody() (string, bool) { return w.Error.msg, w.Error.set && w.ID == "" }

type wireSession struct {
	ID            string            `json:"id"`
	PaymentID     string            `json:"payment_id"`
	Reference     string            `json:"reference"`
	Status        string            `json:"status"`
	PaymentStatus string            `json:"payment_status"`
	Amount        json.Number       `json:"amount"`
	AmountPaisa   json.Number       `json:"amount_paisa"`
	Subtotal      json.Number       `json:"subtotal"`
	SubtotalPaisa json.Number       `json:"subtotal_paisa"`
	Currency      *string           `json:"currency"`
	Customer      wireCustomer      `json:"customer"`
	SuccessURL    *string           `json:"success_url"`
	CancelURL     *string           `json:"cancel_url"`
	TransactionID *string           `json:"transaction_id"`
	PaymentMethod *string           `json:"payment_method"`
	MetaData      map[string]string `json:"meta_data"`
	CreatedAt     string            `json:"created_at"`
	UpdatedAt     string            `json:"updated_at"`
}

type wireSessionEnvelope struct {
	Data  *wireSession `json:"data"`
	Error errField     `json:"error"`
}

func (w *wireSessionEnvelope) errorBody() (string, bool) {
	return w.Error.msg, w.Error.set && w.Data == nil
}

func currency(p *string) string {
	if p == nil || *p == "" {
		return "BDT"
	}
	return *p
}

var errBadTime = errors.New("is not an ISO 8601 timestamp with a time zone")

// parseTime accepts RFC 3339 (Z or an offset, any fraction) and an offset
// without a colon ("+0600").
func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t, err = time.Parse("2006-01-02T15:04:05.999999999Z0700", s)
		if err != nil {
			return time.Time{}, errBadTime
		}
	}
	return t.UTC(), nil
}

func requiredTime(obj, field, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, fmt.Errorf("%s has no %s", obj, field)
	}
	t, err := parseTime(s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s.%s %w", obj, field, err)
	}
	return t, nil
}

func takaField(obj, field string, n json.Number) (Paisa, error) {
	if n == "" {
		return 0, fmt.Errorf("%s has no %s", obj, field)
	}
	v, err := parseDecimal(string(n), 2)
	if err != nil {
		return 0, fmt.Errorf("%s.%s is not an exact amount of taka: %w", obj, field, err)
	}
	return Paisa(v), nil
}

func (w *wirePayment) to(p *Payment, detailed bool) error {
	if w.ID == "" {
		return errors.New("payment has no id")
	}
	switch s := PaymentStatus(w.Status); s {
	case StatusPending, StatusSucceeded, StatusFailed, StatusCancelled, StatusRefunded:
		p.Status = s
	case "":
		return errors.New("payment has no status")
	default:
		return errors.New("payment.status is not one of PENDING, SUCCEEDED, FAILED, CANCELLED, REFUNDED")
	}
	amount, err := takaField("payment", "amount", w.Amount)
	if err != nil {
		return err
	}
	if p.CreatedAt, err = requiredTime("payment", "created_at", w.CreatedAt); err != nil {
		return err
	}
	if p.UpdatedAt, err = requiredTime("payment", "updated_at", w.UpdatedAt); err != nil {
		return err
	}
	p.ID = w.ID
	p.Amount = amount
	p.Currency = currency(w.Currency)
	p.TransactionID = w.TransactionID
	p.PaymentMethod = w.PaymentMethod
	p.Customer = Customer(w.Customer)
	p.Detailed = detailed
	return nil
}

func (w *wirePage) toPage() (*PaymentPage, error) {
	if w.Data == nil {
		return nil, errors.New("list has no data array")
	}
	page := &PaymentPage{Data: make([]Payment, len(w.Data)), HasMore: w.HasMore, NextCursor: w.NextCursor}
	if page.NextCursor != nil && *page.NextCursor == "" {
		page.NextCursor = nil
	}
	if page.HasMore && page.NextCursor == nil {
		return nil, errors.New("list has has_more true but no next_cursor")
	}
	for i := range w.Data {
		if err := w.Data[i].to(&page.Data[i], false); err != nil {
			return nil, fmt.Errorf("data[%d]: %w", i, err)
		}
	}
	return page, nil
}

func countField(obj, field string, n json.Number) (int, error) {
	v, err := parseExactInt(string(n))
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%s.%s is not a non-negative integer", obj, field)
	}
	return int(v), nil
}

func (w *wireLink) toLink() (*PaymentLink, error) {
	if w.ID == "" {
		return nil, errors.New("payment link has no id")
	}
	l := &PaymentLink{
		ID:          w.ID,
		URL:         w.URL,
		Slug:        w.Slug,
		Title:       w.Title,
		Description: w.Description,
		Currency:    currency(w.Currency),
		IsReusable:  w.IsReusable,
		IsActive:    w.IsActive,
		SuccessURL:  w.SuccessURL,
	}
	var err error
	if l.Amount, err = takaField("payment_link", "amount", w.Amount); err != nil {
		return nil, err
	}
	if w.CurrentUses != "" {
		if l.CurrentUses, err = countField("payment_link", "current_uses", w.CurrentUses); err != nil {
			return nil, err
		}
	}
	if w.MaxUses != nil {
		m, err := countField("payment_link", "max_uses", *w.MaxUses)
		if err != nil {
			return nil, err
		}
		l.MaxUses = &m
	}
	if w.ExpiresAt != nil && *w.ExpiresAt != "" {
		t, err := parseTime(*w.ExpiresAt)
		if err != nil {
			return nil, fmt.Errorf("payment_link.expires_at %w", err)
		}
		l.ExpiresAt = &t
	}
	if l.CreatedAt, err = requiredTime("payment_link", "created_at", w.CreatedAt); err != nil {
		return nil, err
	}
	if l.UpdatedAt, err = requiredTime("payment_link", "updated_at", w.UpdatedAt); err != nil {
		return nil, err
	}
	return l, nil
}

// sessionMoney is <field>_paisa or else the taka string <field>; when both are
// there, they agree.
func sessionMoney(field string, taka, paisa json.Number) (Paisa, error) {
	var t Paisa
	if taka != "" {
		var err error
		if t, err = takaField("checkout_session", field, taka); err != nil {
			return 0, err
		}
	}
	if paisa == "" {
		if taka == "" {
			return 0, fmt.Errorf("checkout_session has neither %s nor %s_paisa", field, field)
		}
		return t, nil
	}
	v, err := parseExactInt(string(paisa))
	if err != nil {
		return 0, fmt.Errorf("checkout_session.%s_paisa is not an exact integer: %w", field, err)
	}
	if taka != "" && Paisa(v) != t {
		return 0, fmt.Errorf("checkout_session.%s and %s_paisa disagree", field, field)
	}
	return Paisa(v), nil
}

func (w *wireSessionEnvelope) toSession() (*CheckoutSession, error) {
	d := w.Data
	if d == nil {
		return nil, errors.New("checkout session body has no data object")
	}
	if d.ID == "" {
		return nil, errors.New("checkout_session has no id")
	}
	s := &CheckoutSession{
		ID:            d.ID,
		PaymentID:     d.PaymentID,
		Reference:     d.Reference,
		Status:        d.Status,
		PaymentStatus: d.PaymentStatus,
		Currency:      currency(d.Currency),
		Customer:      Customer(d.Customer),
		SuccessURL:    d.SuccessURL,
		CancelURL:     d.CancelURL,
		TransactionID: d.TransactionID,
		PaymentMethod: d.PaymentMethod,
	}
	var err error
	if s.Amount, err = sessionMoney("amount", d.Amount, d.AmountPaisa); err != nil {
		return nil, err
	}
	if s.Subtotal, err = sessionMoney("subtotal", d.Subtotal, d.SubtotalPaisa); err != nil {
		return nil, err
	}
	if s.CreatedAt, err = requiredTime("checkout_session", "created_at", d.CreatedAt); err != nil {
		return nil, err
	}
	if s.UpdatedAt, err = requiredTime("checkout_session", "updated_at", d.UpdatedAt); err != nil {
		return nil, err
	}
	s.Metadata = make([]MetadataEntry, 0, len(d.MetaData))
	for k, v := range d.MetaData {
		s.Metadata = append(s.Metadata, MetadataEntry{Key: k, Value: v})
	}
	slices.SortFunc(s.Metadata, func(a, b MetadataEntry) int { return strings.Compare(a.Key, b.Key) })
	return s, nil
}

// sameID reports a record of another id than asked (maybe another merchant's),
// quoting neither.
func sameID(obj, asked, got string) error {
	if got != asked {
		return errors.New(obj + " id is not the id asked for")
	}
	return nil
}

// answers reports a checkout session with neither the id nor the payment
// reference asked for.
func (s *CheckoutSession) answers(idOrRef string) error {
	if s.ID != idOrRef && s.Reference != idOrRef {
		return errors.New("checkout session has neither the id nor the reference asked for")
	}
	return nil
}

// answers reports a page that cannot answer p: over the limit, or not
// advancing from its cursor.
func (pg *PaymentPage) answers(p ListParams) error {
	if p.Limit > 0 && len(pg.Data) > p.Limit {
		return errors.New("list has more payments than the limit asked for")
	}
	return pg.advancesFrom(p.Cursor)
}

// advancesFrom reports a page whose next_cursor is the cursor that fetched it
// (an endless list).
func (p *PaymentPage) advancesFrom(cursor string) error {
	if cursor != "" && p.HasMore && p.NextCursor != nil && *p.NextCursor == cursor {
		return errors.New("list next_cursor is the cursor just sent; the list would never end")
	}
	return nil
}
