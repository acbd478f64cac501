package restclient

import "time"

// PaymentStatus is a payment's status as the REST API spells it.
type PaymentStatus string

// The payment statuses the REST API documents.
const (
	StatusPending   PaymentStatus = "PENDING"
	StatusSucceeded PaymentStatus = "SUCCEEDED"
	StatusFailed    PaymentStatus = "FAILED"
	StatusCancelled PaymentStatus = "CANCELLED"
	StatusRefunded  PaymentStatus = "REFUNDED"
)

// Customer is a payment's or session's customer; Address is nil in list items,
// City only on sessions.
type Customer struct {
	Name    *string
	Email   *string
	Phone   *string
	Address *string
	City    *string
}

// Payment is one payment; Detailed: from the retrieve endpoint (with
// customer.address), not a list.
type Payment struct {
	ID            string
	Status        PaymentStatus
	Amount        Paisa
	Currency      string
	TransactionID *string
	PaymentMethod *string
	Customer      Customer
	CreatedAt     time.Time
	UpdatedAt     time.Time
	Detailed      bool
}

// PaymentPage is one page of the list endpoint.
type PaymentPage struct {
	Data       []Payment
	HasMore    bool
	NextCursor *string
}

// ListParams are the list endpoint's query parameters; zeros are not sent.
type ListParams struct {
	Limit  int
	Cursor string
	Status PaymentStatus
}

// PaymentLink is one payment link.
type PaymentLink struct {
	ID          string
	URL         string
	Slug        string
	Title       string
	Description *string
	Amount      Paisa
	Currency    string
	IsReusable  bool
	IsActive    bool
	CurrentUses int
	MaxUses     *int
	ExpiresAt   *time.Time
	SuccessURL  *string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// MetadataEntry is one key/value pair of a checkout session's meta_data.
type MetadataEntry struct {
	Key   string
	Value string
}

// CheckoutSession is one checkout session; Metadata is sorted by key.
type CheckoutSession struct {
	ID            string
	PaymentID     string
	Reference     string
	Status        string
	PaymentStatus string
	Amount        Paisa
	Subtotal      Paisa
	Currency      string
	Customer      Customer
	SuccessURL    *string
	CancelURL     *string
	TransactionID *string
	PaymentMethod *string
	Metadata      []MetadataEntry
	CreatedAt     time.Time
	UpdatedAt     time.Time
}
