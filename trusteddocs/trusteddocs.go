// Package trusteddocs locks a GraphQL endpoint to the operations an app
// ships: it holds a manifest (Apollo's persisted query manifest or Relay's
// persisted_queries.json) and decides, before a request is parsed,
// whether it may run and which text it runs, looked up exactly by id or
// by its text's SHA-256. Reload swaps the whole manifest atomically; a
// file that does not load keeps the old one. Mode allow serves anything
// and reports what is unlisted; enforce refuses it, APQ registrations
// included, so that the APQ cache never becomes a second, writable list.
package trusteddocs

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
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

// Config is the manifest and how to apply it. The zero value is mode off with
// no manifest.
type Config struct {
	Mode Mode // "": Off
	// Path is the manifest file (TRUSTED_DOCUMENTS), required by Allow and
	// Enforce; with Off, loaded and checked if set, never applied.
	Path string
	// Introspection lets Enforce serve queries that select only __schema,
	// __type and __typename; with false nothing unlisted is parsed.
	Introspection bool
}

// Store holds the current manifest, safe for concurrent use.
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
	if err := s.Reload(); err != nil { // with no path, nothing to load
		return nil, err
	}
	return s, nil
}

// Reload reads the manifest again and swaps it in whole; on an error the
// current one stays. With no path configured it does nothing.
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
	ServeSent Action = iota // handle the request as sent, as if there were no manifest
	// ServeListed: run Decision.Query, the manifest's text, dropping the
	// request's persistedQuery extension and documentId (not for the APQ cache
	// to register).
	ServeListed
	Refuse // answer Decision.Code with Decision.Message, without parsing
)

// Decision is the answer for one request.
type Decision struct {
	Action  Action
	Query   string // ServeListed: the text to run
	Code    string // Refuse: CodeNotListed or CodeNotFound
	Message string // Refuse: for the GraphQL error
	Outcome string // one of the Outcome constants
	// Hash is the SHA-256 (hex) of the text sent or named by APQ: unlisted
	// documents are logged by hash, never by text.
	Hash string
}

const (
	msgNotListed       = "the document is not in this gateway's trusted documents"
	msgRegistration    = "automatic persisted query registration is disabled: only trusted documents are served"
	msgUnknownDocument = "unknown documentId: send the query text"
)

// unlisted answers an unlisted document: refused with msg and outcome under
// enforce, else served as sent.
func unlisted(enforce bool, msg, outcome, hash string) Decision {
	if enforce {
		return Decision{Action: Refuse, Code: CodeNotListed, Message: msg, Outcome: outcome, Hash: hash}
	}
	return Decision{Action: ServeSent, Outcome: OutcomeUnlisted, Hash: hash}
}

func listed(body, hash string) Decision {
	return Decision{Action: ServeListed, Query: body, Outcome: OutcomeListed, Hash: hash}
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
		switch body, ok := m.lookupID(r.DocumentID); {
		case ok:
			return listed(body, "")
		case enforce:
			return unlisted(true, msgNotListed, OutcomeNotListed, "")
		case r.Query == "":
			return Decision{Action: Refuse, Code: CodeNotFound, Message: msgUnknownDocument, Outcome: OutcomeUnknownID}
		}
		return unlisted(false, "", "", hashOf(r.Query))

	case r.SHA256Hash != "" && r.Query == "": // APQ lookup
		if body, ok := m.byHash[r.SHA256Hash]; ok {
			return listed(body, r.SHA256Hash)
		}
		return unlisted(enforce, msgNotListed, OutcomeNotListed, r.SHA256Hash)

	case r.SHA256Hash != "": // APQ registration: the hash of the text decides, never the hash sent
		h := hashOf(r.Query)
		if body, ok := m.byHash[h]; ok && h == r.SHA256Hash {
			return listed(body, h)
		}
		return unlisted(enforce, msgRegistration, OutcomeAPQRegistrationRefused, h)
	}

	if r.Query == "" {
		return unlisted(enforce, msgNotListed, OutcomeNotListed, "")
	}
	h := hashOf(r.Query)
	if body, ok := m.byHash[h]; ok {
		return listed(body, h)
	}
	if enforce && s.introspection && isIntrospection(r.Query) {
		return Decision{Action: ServeSent, Outcome: OutcomeIntrospection, Hash: h}
	}
	return unlisted(enforce, msgNotListed, OutcomeNotListed, h)
}

func hashOf(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:])
}

// Document is one operation of the manifest: its id and text.
type Document struct{ ID, Body string }

// Documents lists the manifest's operations in id order (nil when none is
// loaded) with the SHA-256 of its file, for the MCP tools.
func (s *Store) Documents() (sha256 string, docs []Document) {
	m := s.cur.Load()
	if m == nil {
		return "", nil
	}
	docs = make([]Document, 0, len(m.byID))
	for id, body := range m.byID {
		docs = append(docs, Document{ID: id, Body: body})
	}
	slices.SortFunc(docs, func(a, b Document) int { return strings.Compare(a.ID, b.ID) })
	return m.digest, docs
}
