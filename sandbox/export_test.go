package sandbox

// The error messages the tests expect in {"error": "..."} bodies.
const (
	ErrMsgNotFound         = "Not found"
	ErrMsgMethodNotAllowed = "Method not allowed"
	ErrMsgMissingCreds     = "Missing API credentials"
	ErrMsgInvalidCreds     = "Invalid API credentials"
	ErrMsgInvalidStatus    = "Invalid status"
	ErrMsgPaymentNotFound  = "Payment not found"
	ErrMsgSessionNotFound  = "Checkout session not found"
	ErrMsgInvalidBody      = "Invalid body"
)
