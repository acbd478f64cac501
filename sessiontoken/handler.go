package sessiontoken

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"time"
)

// Defaults of the token endpoint.
const (
	// DefaultTTL is the lifetime a request naming none gets: a checkout visit;
	// a leaked token soon dies.
	DefaultTTL = 15 * time.Minute
	// DefaultMaxTTL is the longest lifetime a request may ask for: a retired
	// key stays in TOKEN_KEYS this long.
	DefaultMaxTTL   = time.Hour
	MaxRequestBytes = 4096 // bounds the request body
)

// Errors the Options hooks return to choose the answer; anything else is an upstream failure.
var (
	ErrBadCredentials = errors.New("the REST API refused the credential pair")        // 401 UNAUTHENTICATED
	ErrRateLimited    = errors.New("the REST API is rate limiting these credentials") // 429 RATE_LIMITED
	// ErrNoSuchSession: LookupCheckoutSession found no such session (400 BAD_USER_INPUT).
	ErrNoSuchSession = errors.New("no checkout session with this id or reference")
)

// Options configure NewHandler.
type Options struct {
	Keyring    *Keyring      // mints the tokens (its clock the time of minting); nil: tokens are off (404)
	DefaultTTL time.Duration // the lifetime when the request names none (zero: the package's), at most MaxTTL
	// MaxTTL is the longest lifetime, refused (not shortened) above
	// (TOKEN_MAX_TTL; zero: DefaultMaxTTL).
	MaxTTL time.Duration
	// Verify, required with a Keyring, checks the pair with the REST API once
	// per mint: nil or an error above.
	Verify func(ctx context.Context, c Credentials) error
	// LookupCheckoutSession, when set, replaces Verify for a checkout-session scope: it reads the session
	// with the pair, returning its names for the token to carry (nil: resolvers learn them, SessionToLearn).
	LookupCheckoutSession func(ctx context.Context, c Credentials, idOrRef string) (CheckoutSessionIDs, error)
	// MaxCustomerData is the most customer data a token may read (CUSTOMER_DATA_MAX; zero:
	// CustomerDataFull): more is refused; a request naming no level gets its scope's default, lowered to this.
	MaxCustomerData CustomerData
	// KeyHeader and SecretHeader name the credential headers; WriteError
	// writes the contract's errors. Required.
	KeyHeader, SecretHeader string
	WriteError              func(w http.ResponseWriter, status int, code, msg string)
}

// request is the token endpoint's body; scope is required, so that the broadest scope is always a choice.
type request struct {
	TTLSeconds   *int64        `json:"ttlSeconds"`
	Scope        *Scope        `json:"scope"`
	CustomerData *CustomerData `json:"customerData"`
}

// response is the token endpoint's answer.
type response struct {
	Token        string       `json:"token"`
	ExpiresAt    string       `json:"expiresAt"`
	Scope        Scope        `json:"scope"`
	CustomerData CustomerData `json:"customerData"`
}

// NewHandler returns the token endpoint: POST with the credential headers (each once) and a JSON body;
// the pair is checked against the REST API, then a token minted. Answers are no-store; wiring mistakes panic.
func NewHandler(opts Options) http.Handler {
	if opts.DefaultTTL < 0 || opts.MaxTTL < 0 {
		panic("sessiontoken: negative TTL option")
	}
	if opts.KeyHeader == "" || opts.SecretHeader == "" || opts.WriteError == nil {
		panic("sessiontoken: Options.KeyHeader, SecretHeader and WriteError are required")
	}
	if opts.Keyring != nil && opts.Verify == nil {
		panic("sessiontoken: Options.Verify is required: a token endpoint that does not check the pair would mint for anyone")
	}
	opts.MaxTTL = cmp.Or(opts.MaxTTL, DefaultMaxTTL)
	opts.DefaultTTL = min(cmp.Or(opts.DefaultTTL, DefaultTTL), opts.MaxTTL)
	opts.MaxCustomerData = cmp.Or(opts.MaxCustomerData, CustomerDataFull)
	return &handler{opts}
}

type handler struct{ opts Options }

const (
	codeBadUserInput    = "BAD_USER_INPUT"
	codeUnauthenticated = "UNAUTHENTICATED"
)

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	writeError := h.opts.WriteError
	w.Header().Set("Cache-Control", "no-store")
	if h.opts.Keyring == nil {
		writeError(w, http.StatusNotFound, "NOT_FOUND", "session tokens are off: TOKEN_KEYS is not set")
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, codeBadUserInput, "the token endpoint takes POST only")
		return
	}
	creds, status, code, msg := h.credentialsOf(r)
	if status != 0 {
		writeError(w, status, code, msg)
		return
	}
	req, status, msg := readRequest(w, r)
	if status != 0 {
		writeError(w, status, codeBadUserInput, msg)
		return
	}
	ttl := h.opts.DefaultTTL
	if req.TTLSeconds != nil {
		n := *req.TTLSeconds
		if n <= 0 {
			writeError(w, http.StatusBadRequest, codeBadUserInput, "ttlSeconds must be a positive number of seconds")
			return
		}
		if n > int64(h.opts.MaxTTL/time.Second) {
			writeError(w, http.StatusBadRequest, codeBadUserInput, fmt.Sprintf(
				"ttlSeconds %d is above the maximum of %d (TOKEN_MAX_TTL)", n, int64(h.opts.MaxTTL/time.Second)))
			return
		}
		ttl = time.Duration(n) * time.Second
	}
	scope := req.Scope.AtMost(h.opts.MaxCustomerData)
	if c := req.CustomerData; c != nil {
		if *c > h.opts.MaxCustomerData {
			writeError(w, http.StatusBadRequest, codeBadUserInput, fmt.Sprintf(
				"customerData %q is above this gateway's maximum of %q (CUSTOMER_DATA_MAX)", c, h.opts.MaxCustomerData))
			return
		}
		scope = scope.WithCustomerData(*c)
	}

	var err error
	if scope.Kind() == ScopeCheckoutSession && h.opts.LookupCheckoutSession != nil {
		var ids CheckoutSessionIDs
		if ids, err = h.opts.LookupCheckoutSession(r.Context(), creds, scope.ID()); err == nil {
			scope, err = scope.withSession(ids) // names not the session's: an upstream failure
		}
	} else {
		err = h.opts.Verify(r.Context(), creds)
	}
	if err != nil {
		h.writeCheckError(w, err)
		return
	}

	token, expiresAt, err := h.opts.Keyring.Mint(creds, scope, ttl)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "INTERNAL_SERVER_ERROR", "internal error: the token could not be made")
		return
	}
	body, _ := json.Marshal(response{Token: token, ExpiresAt: expiresAt.UTC().Format(DateTimeLayout), Scope: scope, CustomerData: scope.CustomerData()})
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// credentialsOf reads the pair (each header exactly once), or says what answer to give (status 0: none).
func (h *handler) credentialsOf(r *http.Request) (c Credentials, status int, code, msg string) {
	kh, sh := h.opts.KeyHeader, h.opts.SecretHeader
	keys, secrets := r.Header.Values(kh), r.Header.Values(sh)
	switch {
	case len(keys) > 1 || len(secrets) > 1:
		return c, http.StatusBadRequest, codeBadUserInput, kh + " and " + sh + " must each be sent once"
	case len(keys) == 0 || len(secrets) == 0 || keys[0] == "" || secrets[0] == "":
		msg := "the token endpoint needs the " + kh + " and " + sh + " headers"
		if r.Header.Get("Authorization") != "" {
			msg += "; a session token cannot mint another"
		}
		return c, http.StatusUnauthorized, codeUnauthenticated, msg
	case len(keys[0]) > MaxCredentialBytes || len(secrets[0]) > MaxCredentialBytes:
		return c, http.StatusBadRequest, codeBadUserInput,
			kh + " or " + sh + " is longer than " + strconv.Itoa(MaxCredentialBytes) + " bytes"
	}
	return Credentials{APIKey: keys[0], APISecret: secrets[0]}, 0, "", ""
}

// readRequest reads and checks the bounded body, or says what answer to give (status 0: none).
func readRequest(w http.ResponseWriter, r *http.Request) (req request, status int, msg string) {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return req, http.StatusUnsupportedMediaType, "the body must be JSON (Content-Type: application/json)"
	}
	if r.ContentLength > MaxRequestBytes {
		return req, http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is larger than %d bytes", MaxRequestBytes)
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxRequestBytes))
	dec.DisallowUnknownFields()
	err := dec.Decode(&req)
	if err == nil && dec.Decode(&struct{}{}) != io.EOF {
		err = errors.New("more than one JSON value")
	}
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return req, http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is larger than %d bytes", MaxRequestBytes)
		}
		return req, http.StatusBadRequest, `the body is not {"ttlSeconds": n, "scope": {"kind": "all"|"checkoutSession"|"payment", "id": "..."}, "customerData": "full"|"masked"|"none"}: ` + err.Error()
	}
	if req.Scope == nil {
		return req, http.StatusBadRequest, `scope is required: {"kind": "all"} for every read, {"kind": "checkoutSession", "id": …} or {"kind": "payment", "id": …}`
	}
	return req, 0, ""
}

// writeCheckError answers a failed credential check, never with the hook's error text.
func (h *handler) writeCheckError(w http.ResponseWriter, err error) {
	writeError := h.opts.WriteError
	switch {
	case errors.Is(err, ErrBadCredentials):
		writeError(w, http.StatusUnauthorized, codeUnauthenticated, "the REST API refused this "+h.opts.KeyHeader+" and "+h.opts.SecretHeader)
	case errors.Is(err, ErrNoSuchSession):
		writeError(w, http.StatusBadRequest, codeBadUserInput, "scope.id: "+ErrNoSuchSession.Error()+" for these credentials")
	case errors.Is(err, ErrRateLimited):
		writeError(w, http.StatusTooManyRequests, "RATE_LIMITED", "the REST API is rate limiting these credentials; retry later")
	case errors.Is(err, context.DeadlineExceeded):
		writeError(w, http.StatusGatewayTimeout, "UPSTREAM_TIMEOUT", "the REST API did not answer in time to check the credentials")
	default:
		writeError(w, http.StatusBadGateway, "UPSTREAM_ERROR", "the credentials could not be checked: the REST API failed")
	}
}
