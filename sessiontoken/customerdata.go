package sessiontoken

// This file holds a token's customer-data level (issue 27): how much of
// the merchant's customers' personal data (name, email, phone, address,
// city) the token may read, chosen by the merchant's server at minting
// beside the scope. What each level renders is the GraphQL layer's
// (graph/customerdata); this leaf owns the levels, their spelling and
// the default of each scope.

import (
	"encoding/json"
	"fmt"
)

// CustomerData is a customer-data level. The levels are ordered: a
// higher one reads more (CustomerDataNone < CustomerDataMasked <
// CustomerDataFull), so the lower of two levels is min of them. The zero
// value is no level: Scope.CustomerData reads it as CustomerDataNone (a
// token that somehow carries none reads nothing personal).
type CustomerData uint8

// The levels, as spelled in the token endpoint's JSON ("customerData").
const (
	// CustomerDataNone: name, email, phone, address and city are null.
	CustomerDataNone CustomerData = iota + 1
	// CustomerDataMasked: name, email and phone in a partial form that
	// lets a person recognise them, the address withheld (null, and no
	// REST call for it), the city as it is.
	CustomerDataMasked
	// CustomerDataFull: every field as the REST API answers it (what the
	// two credential headers read, unless CUSTOMER_DATA_MAX lowers it).
	CustomerDataFull
)

// ParseCustomerData reads "full", "masked" or "none".
func ParseCustomerData(s string) (CustomerData, error) {
	switch s {
	case "full":
		return CustomerDataFull, nil
	case "masked":
		return CustomerDataMasked, nil
	case "none":
		return CustomerDataNone, nil
	}
	return 0, fmt.Errorf(`customerData %q is not "full", "masked" or "none"`, s)
}

// String is "full", "masked", "none", or "" for the zero value.
func (c CustomerData) String() string {
	switch c {
	case CustomerDataFull:
		return "full"
	case CustomerDataMasked:
		return "masked"
	case CustomerDataNone:
		return "none"
	}
	return ""
}

// MarshalJSON writes the level's name.
func (c CustomerData) MarshalJSON() ([]byte, error) {
	if c.String() == "" {
		return nil, fmt.Errorf("sessiontoken: no customer-data level")
	}
	return json.Marshal(c.String())
}

// UnmarshalJSON reads a level's name, refusing anything else.
func (c *CustomerData) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf(`customerData is not "full", "masked" or "none"`)
	}
	v, err := ParseCustomerData(s)
	if err != nil {
		return err
	}
	*c = v
	return nil
}

// DefaultCustomerData is the level of a token minted for a scope of kind
// without "customerData". It is CustomerDataMasked for every scope, each
// for its own reason; a merchant's server asks for "full" when a screen
// needs it, and "none" when it needs nothing personal:
//
//   - "checkoutSession": a checkout or confirmation page in the buyer's
//     browser. It shows status and amount, and at most enough to say
//     "this is your order" (initials, a***@example.com, the city); the
//     token sits in a page where a script or an extension may read it.
//   - "payment": a receipt, a shop till, a delivery or support screen:
//     recognising the customer (the last digits of a phone) is the need,
//     contacting them is the merchant server's business.
//   - "all": the broadest token, reading every customer of the merchant.
//     Leaked, a full-data "all" token gives away the whole customer base's
//     contact details until it expires; masked, it gives initials and
//     partial contacts only.
//
// The two credential headers are a server's, not a browser's: they read
// full data unless the operator lowers it (CUSTOMER_DATA_MAX).
func DefaultCustomerData(kind ScopeKind) CustomerData {
	switch kind {
	case ScopeAll, ScopeCheckoutSession, ScopePayment:
		return CustomerDataMasked
	}
	return CustomerDataNone
}

// CustomerData is the scope's customer-data level: the one it was minted
// with, or its kind's default (DefaultCustomerData); CustomerDataNone
// for the zero Scope.
func (s Scope) CustomerData() CustomerData {
	if s.customer == 0 {
		return CustomerDataNone
	}
	return s.customer
}

// WithCustomerData returns s reading customer data at level c (a zero c
// leaves s as it is).
func (s Scope) WithCustomerData(c CustomerData) Scope {
	if c != 0 {
		s.customer = c
	}
	return s
}

// AtMost returns s with its customer-data level lowered to max when it is
// above it (the deployment's CUSTOMER_DATA_MAX, which may have been
// lowered after the token was minted); a zero max changes nothing.
func (s Scope) AtMost(max CustomerData) Scope {
	if max != 0 && s.CustomerData() > max {
		s.customer = max
	}
	return s
}
