// Package trusteddocs locks a GraphQL endpoint to the operations an app
// ships (trusted documents, also called persisted queries or a safelist):
// it holds a manifest of documents and decides, before the request is
// parsed, whether a request may run and which text it runs.
//
// # Manifests
//
// Two formats are read, told apart by their shape:
//
//   - Apollo's persisted query manifest, as written by
//     @apollo/generate-persisted-query-manifest (or by BuildManifest):
//     {"format":"apollo-persisted-query-manifest","version":1,
//     "operations":[{"id","body","name","type"}]}
//   - Relay's persisted_queries.json, as written by the Relay compiler's
//     persistConfig: {"<id>": "<query text>"}.
//
// Each document can be asked for by its id (the GraphQL-over-HTTP
// persisted documents proposal's documentId: a plain id from the manifest,
// or "sha256:<hex>") or by the SHA-256 of its text (APQ's
// extensions.persistedQuery.sha256Hash, and "sha256:<hex>" ids). Every
// document must parse as GraphQL; an id may not name two texts; an empty
// manifest is refused (a truncated file must not lock every app out).
//
// The manifest is read at start and on Reload (the composition root calls
// it on SIGHUP). Reload is atomic: a request sees the old set or the new
// one, never an empty or partial one, and a file that does not load keeps
// the old set and returns the error.
//
// # Modes
//
//	TRUSTED_DOCUMENTS_MODE           off (default) | allow | enforce
//	TRUSTED_DOCUMENTS                path of the manifest (required by allow and enforce)
//	TRUSTED_DOCUMENTS_INTROSPECTION  true | false (default): enforce also serves introspection-only queries
//
// off: the package decides nothing (a manifest given anyway is still
// loaded and checked, so a rollout can stage it). allow: listed documents
// are served by id or hash; anything else is served as sent and reported
// as unlisted (Decision.Outcome, with the text's hash for the log), which
// shows what enforce would refuse. enforce: anything not listed is refused
// with PERSISTED_QUERY_NOT_LISTED before it is parsed, and so is an APQ
// registration (a hash sent with a query that is not listed), since the
// APQ cache would otherwise become a second, writable list.
//
// Lookups are exact: a query text sent in full is listed only if it is
// byte for byte a manifest body (what clients that send the text they
// were built with do). Decide uses plain strings, so that the HTTP edge
// can call it with whatever its transport decoded.
package trusteddocs

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
)

// Mode is how the manifest is applied.
type Mode string

// The modes (TRUSTED_DOCUMENTS_MODE).
const (
	Off     Mode = "off"
	Allow   Mode = "allow"
	Enforce Mode = "enforce"
)

// ParseMode reads a TRUSTED_DOCUMENTS_MODE value ("" is Off).
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.ToLower(strings.TrimSpace(s))); m {
	case "", Off:
		return Off, nil
	case Allow, Enforce:
		return m, nil
	}
	return "", fmt.Errorf("trusteddocs: TRUSTED_DOCUMENTS_MODE must be off, allow or enforce, not %q", s)
}

// The contract's error codes a refusal carries (extensions.code).
const (
	CodeNotListed = "PERSISTED_QUERY_NOT_LISTED"
	CodeNotFound  = "PERSISTED_QUERY_NOT_FOUND"
)

// Outcomes, for metrics and logs (Decision.Outcome).
const (
	OutcomeOff                    = "off"                      // mode off: not involved
	OutcomeListed                 = "listed"                   // served from the manifest
	OutcomeUnlisted               = "unlisted"                 // allow: not listed, served as sent
	OutcomeUnknownID              = "unknown_id"               // allow: a documentId the manifest lacks, and no text: refused NOT_FOUND
	OutcomeNotListed              = "not_listed"               // enforce: refused
	OutcomeAPQRegistrationRefused = "apq_registration_refused" // enforce: a hash with an unlisted text: refused
	OutcomeIntrospection          = "introspection"            // enforce with introspection allowed: served as sent
)

// Config is the manifest and how to apply it. The zero value is mode off
// with no manifest.
type Config struct {
	// Mode is Off, Allow or Enforce. If empty, Off.
	Mode Mode
	// Path is the manifest file (TRUSTED_DOCUMENTS). Required by Allow and
	// Enforce; with Off, loaded and checked if set, never applied.
	Path string
	// Introspection lets Enforce serve queries that select only __schema,
	// __type and __typename (TRUSTED_DOCUMENTS_INTROSPECTION). Such a
	// query, when not listed, is parsed once (syntax only) to tell; with
	// false nothing unlisted is parsed. Ignored by Off and Allow, which
	// serve introspection as any other query.
	Introspection bool
}

// Store holds the current manifest. It is safe for concurrent use.
type Store struct {
	mode          Mode
	path          string
	introspection bool
	cur           atomic.Pointer[manifest]
	reload        sync.Mutex // one Reload at a time, so an older read never replaces a newer one
}

// New loads the manifest of cfg. It fails on a bad mode, a missing path
// under Allow or Enforce, or a manifest that does not load.
func New(cfg Config) (*Store, error) {
	mode, err := ParseMode(string(cfg.Mode))
	if err != nil {
		return nil, err
	}
	if mode != Off && cfg.Path == "" {
		return nil, fmt.Errorf("trusteddocs: TRUSTED_DOCUMENTS_MODE=%s needs TRUSTED_DOCUMENTS (the manifest's path)", mode)
	}
	s := &Store{mode: mode, path: cfg.Path, introspection: cfg.Introspection}
	if cfg.Path != "" {
		if err := s.Reload(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Reload reads the manifest again and swaps it in whole. On any error the
// current manifest stays and the error says what was wrong. With no path
// configured it does nothing.
func (s *Store) Reload() error {
	if s.path == "" {
		return nil
	}
	s.reload.Lock()
	defer s.reload.Unlock()
	m, err := loadFile(s.path)
	if err != nil {
		return err
	}
	s.cur.Store(m)
	return nil
}

// Mode is the configured mode.
func (s *Store) Mode() Mode { return s.mode }

// Info describes the manifest in use, for the log line of a (re)load.
type Info struct {
	Format     string // FormatApollo or FormatRelay; "" when none is loaded
	Operations int    // documents listed
	SHA256     string // of the file, to tell which version a replica serves
}

// Info describes the manifest in use.
func (s *Store) Info() Info {
	m := s.cur.Load()
	if m == nil {
		return Info{}
	}
	return Info{Format: m.format, Operations: len(m.byID), SHA256: m.digest}
}

// Request is what a GraphQL request sent, as plain strings ("" when absent).
type Request struct {
	Query      string // the "query" member
	SHA256Hash string // extensions.persistedQuery.sha256Hash (APQ)
	DocumentID string // the "documentId" member (GraphQL-over-HTTP persisted documents)
}

// Action is what the caller does with a request.
type Action int

const (
	// ServeSent: handle the request as sent, as if there were no manifest
	// (its query, or its APQ hash through the APQ cache).
	ServeSent Action = iota
	// ServeListed: run Decision.Query, the manifest's text, and drop the
	// request's persistedQuery extension and documentId (answered here:
	// the APQ cache must not register it).
	ServeListed
	// Refuse: answer Decision.Code with Decision.Message, without parsing
	// or running anything.
	Refuse
)

// Decision is the answer for one request.
type Decision struct {
	Action  Action
	Query   string // ServeListed: the text to run
	Code    string // Refuse: CodeNotListed or CodeNotFound
	Message string // Refuse: for the GraphQL error
	Outcome string // one of the Outcome constants
	// Hash is the SHA-256 (hex) of the text when one was sent or named
	// by APQ, so that allow can log unlisted documents by hash, never by
	// text.
	Hash string
}

const (
	msgNotListed       = "the document is not in this gateway's trusted documents"
	msgRegistration    = "automatic persisted query registration is disabled: only trusted documents are served"
	msgUnknownDocument = "unknown documentId: send the query text"
)

func refuse(code, msg, outcome, hash string) Decision {
	return Decision{Action: Refuse, Code: code, Message: msg, Outcome: outcome, Hash: hash}
}

// Decide says whether r may run and what it runs.
func (s *Store) Decide(r Request) Decision {
	m := s.cur.Load()
	if s.mode == Off || m == nil {
		return Decision{Action: ServeSent, Outcome: OutcomeOff}
	}
	enforce := s.mode == Enforce
	switch {
	case r.DocumentID != "":
		if body, ok := m.lookupID(r.DocumentID); ok {
			return Decision{Action: ServeListed, Query: body, Outcome: OutcomeListed}
		}
		if enforce {
			return refuse(CodeNotListed, msgNotListed, OutcomeNotListed, "")
		}
		if r.Query == "" {
			return refuse(CodeNotFound, msgUnknownDocument, OutcomeUnknownID, "")
		}
		return Decision{Action: ServeSent, Outcome: OutcomeUnlisted, Hash: hashOf(r.Query)}

	case r.SHA256Hash != "" && r.Query == "": // APQ lookup
		if body, ok := m.byHash[r.SHA256Hash]; ok {
			return Decision{Action: ServeListed, Query: body, Outcome: OutcomeListed, Hash: r.SHA256Hash}
		}
		if enforce {
			return refuse(CodeNotListed, msgNotListed, OutcomeNotListed, r.SHA256Hash)
		}
		return Decision{Action: ServeSent, Outcome: OutcomeUnlisted, Hash: r.SHA256Hash}

	case r.SHA256Hash != "": // APQ registration: the hash of the text decides, never the hash sent
		h := hashOf(r.Query)
		if body, ok := m.byHash[h]; ok && h == r.SHA256Hash {
			return Decision{Action: ServeListed, Query: body, Outcome: OutcomeListed, Hash: h}
		}
		if enforce {
			return refuse(CodeNotListed, msgRegistration, OutcomeAPQRegistrationRefused, h)
		}
		return Decision{Action: ServeSent, Outcome: OutcomeUnlisted, Hash: h}
	}

	if r.Query == "" {
		if enforce {
			return refuse(CodeNotListed, msgNotListed, OutcomeNotListed, "")
		}
		return Decision{Action: ServeSent, Outcome: OutcomeUnlisted}
	}
	h := hashOf(r.Query)
	if body, ok := m.byHash[h]; ok {
		return Decision{Action: ServeListed, Query: body, Outcome: OutcomeListed, Hash: h}
	}
	if !enforce {
		return Decision{Action: ServeSent, Outcome: OutcomeUnlisted, Hash: h}
	}
	if s.introspection && isIntrospection(r.Query) {
		return Decision{Action: ServeSent, Outcome: OutcomeIntrospection, Hash: h}
	}
	return refuse(CodeNotListed, msgNotListed, OutcomeNotListed, h)
}

func hashOf(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:])
}

var errEmpty = errors.New("lists no operations")
