// Reading a manifest file into the two indexes Decide uses.

package trusteddocs

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
)

// The formats, as Info reports them.
const (
	FormatApollo = "apollo-persisted-query-manifest"
	FormatRelay  = "relay-persisted-queries"
)

// MaxManifestBytes bounds the file read; a larger one is refused unread.
const MaxManifestBytes = 32 << 20

// manifest is one loaded file. It is never changed after loading.
type manifest struct {
	byID   map[string]string // id -> text
	byHash map[string]string // sha256 hex of the text -> text
	format string
	digest string // sha256 of the file
}

// lookupID finds a documentId: a plain id from the manifest, or
// "sha256:<hex>" (the persisted documents proposal's hash form).
func (m *manifest) lookupID(id string) (string, bool) {
	if body, ok := m.byID[id]; ok {
		return body, true
	}
	if h, ok := strings.CutPrefix(id, "sha256:"); ok {
		body, ok := m.byHash[h]
		return body, ok
	}
	return "", false
}

// apolloManifest is Apollo's format, version 1.
type apolloManifest struct {
	Format     string              `json:"format"`
	Version    int                 `json:"version"`
	Operations []manifestOperation `json:"operations"`
}

type manifestOperation struct {
	ID   string `json:"id"`
	Body string `json:"body"`
	Name string `json:"name"`
	Type string `json:"type"`
}

func loadFile(path string) (*manifest, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("trusteddocs: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > MaxManifestBytes {
		return nil, fmt.Errorf("trusteddocs: %s is larger than %d bytes", path, MaxManifestBytes)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxManifestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("trusteddocs: reading %s: %w", path, err)
	}
	if len(data) > MaxManifestBytes { // it grew while being read
		return nil, fmt.Errorf("trusteddocs: %s is larger than %d bytes", path, MaxManifestBytes)
	}
	m, err := parseManifest(data)
	if err != nil {
		return nil, fmt.Errorf("trusteddocs: %s: %w", path, err)
	}
	return m, nil
}

// parseManifest reads either format and checks every document.
func parseManifest(data []byte) (*manifest, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	sum := sha256.Sum256(data)
	m := &manifest{byID: map[string]string{}, byHash: map[string]string{}, digest: hex.EncodeToString(sum[:])}
	if _, ok := top["format"]; ok {
		m.format = FormatApollo
		var am apolloManifest
		if err := json.Unmarshal(data, &am); err != nil {
			return nil, fmt.Errorf("apollo manifest: %w", err)
		}
		if am.Format != FormatApollo || am.Version != 1 {
			return nil, fmt.Errorf("format %q version %d: want %q version 1", am.Format, am.Version, FormatApollo)
		}
		for i, op := range am.Operations {
			if !slices.Contains([]string{"", "query", "mutation", "subscription"}, op.Type) {
				return nil, fmt.Errorf("operation %d (%q): type %q", i, op.ID, op.Type)
			}
			if err := m.add(op.ID, op.Body); err != nil {
				return nil, fmt.Errorf("operation %d: %w", i, err)
			}
		}
	} else {
		m.format = FormatRelay
		for id, raw := range top {
			var body string
			if err := json.Unmarshal(raw, &body); err != nil {
				return nil, fmt.Errorf("relay persisted queries: %q is not a string of query text", id)
			}
			if err := m.add(id, body); err != nil {
				return nil, err
			}
		}
	}
	if len(m.byID) == 0 {
		return nil, errors.New("lists no operations")
	}
	return m, nil
}

// add indexes one document after checking it.
func (m *manifest) add(id, body string) error {
	if id == "" || strings.TrimSpace(body) == "" {
		return fmt.Errorf("id %q: an id and a body are required", id)
	}
	if prev, ok := m.byID[id]; ok {
		if prev != body {
			return fmt.Errorf("id %q names two different documents", id)
		}
		return nil
	}
	if _, err := parser.ParseQuery(&ast.Source{Name: id, Input: body}); err != nil {
		return fmt.Errorf("id %q: %w", id, err)
	}
	m.byID[id] = body
	m.byHash[hashOf(body)] = body
	return nil
}
