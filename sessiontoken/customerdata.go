package sessiontoken

// A token's customer-data level: how much of the customers' personal data it
// may read (graph renders each).

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
)

// CustomerData is a customer-data level, ordered: a higher one reads more;
// zero is none (CustomerDataNone).
type CustomerData uint8

// The levels, as spelled in the token endpoint's JSON ("customerData").
const (
	// CustomerDataNone: name, email, phone, address and city are null.
	CustomerDataNone CustomerData = iota + 1
	// CustomerDataMasked: name, email and phone partial, the address withheld
	// (no REST call), the city as is.
	CustomerDataMasked
	// CustomerDataFull: every field as the REST API answers it.
	CustomerDataFull
)

var customerDataNames = [...]string{CustomerDataNone: "none", CustomerDataMasked: "masked", CustomerDataFull: "full"}

// ParseCustomerData reads "full", "masked" or "none".
func ParseCustomerData(s string) (CustomerData, error) {
	if c := slices.Index(customerDataNames[:], s); c > 0 {
		return CustomerData(c), nil
	}
	return 0, fmt.Errorf(`customerData %q is not "full", "masked" or "none"`, s)
}

// String is "full", "masked", "none", or "" for no level.
func (c CustomerData) String() string {
	if int(c) < len(customerDataNames) {
		return customerDataNames[c]
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
	if err == nil {
		*c = v
	}
	return err
}

// defaultCustomerData is the level of a token minted without "customerData",
// for every scope (a page's script may read a token; a leaked one must not
// give contacts away). Servers ask for "full".
const defaultCustomerData = CustomerDataMasked

// CustomerData is the scope's customer-data level (CustomerDataNone for the zero Scope).
func (s Scope) CustomerData() CustomerData { return cmp.Or(s.customer, CustomerDataNone) }

// WithCustomerData returns s reading customer data at level c (a zero c leaves s as it is).
func (s Scope) WithCustomerData(c CustomerData) Scope {
	s.customer = cmp.Or(c, s.customer)
	return s
}

// AtMost lowers s's customer-data level to max if above (CUSTOMER_DATA_MAX may
// drop after minting); 0: no-op.
func (s Scope) AtMost(max CustomerData) Scope {
	if max != 0 && s.CustomerData() > max {
		s.customer = max
	}
	return s
}
