// Writing an Apollo manifest from a client's .graphql files (-manifest).

package trusteddocs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/formatter"
	"github.com/vektah/gqlparser/v2/parser"
)

// BuildManifest reads .graphql files and returns an Apollo persisted
// query manifest: per named operation, its text and its fragments' as
// gqlparser prints them, with that body's SHA-256 as id (a client that
// hashes its own printing needs its own stack's generator).
func BuildManifest(files []string) ([]byte, error) {
	var ops []*ast.OperationDefinition
	fragments := map[string]*ast.FragmentDefinition{}
	where := map[string]string{} // definition name -> file, for messages
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("trusteddocs: %w", err)
		}
		doc, err := parser.ParseQuery(&ast.Source{Name: file, Input: string(src)})
		if err != nil {
			return nil, fmt.Errorf("trusteddocs: %s: %w", file, err)
		}
		for _, op := range doc.Operations {
			if op.Name == "" {
				return nil, fmt.Errorf("trusteddocs: %s: an operation has no name; name every operation", file)
			}
			if prev, ok := where["operation "+op.Name]; ok {
				return nil, fmt.Errorf("trusteddocs: operation %s is defined in %s and %s", op.Name, prev, file)
			}
			where["operation "+op.Name] = file
			ops = append(ops, op)
		}
		for _, f := range doc.Fragments {
			if prev, ok := where["fragment "+f.Name]; ok {
				return nil, fmt.Errorf("trusteddocs: fragment %s is defined in %s and %s", f.Name, prev, file)
			}
			where["fragment "+f.Name] = file
			fragments[f.Name] = f
		}
	}
	if len(ops) == 0 {
		return nil, fmt.Errorf("trusteddocs: no operation in %d file(s)", len(files))
	}
	slices.SortFunc(ops, func(a, b *ast.OperationDefinition) int { return strings.Compare(a.Name, b.Name) })

	out := apolloManifest{Format: FormatApollo, Version: 1}
	for _, op := range ops {
		used := map[string]bool{}
		if err := collectFragments(op.SelectionSet, fragments, used); err != nil {
			return nil, fmt.Errorf("trusteddocs: operation %s (%s): %w", op.Name, where["operation "+op.Name], err)
		}
		doc := &ast.QueryDocument{Operations: ast.OperationList{op}}
		for _, n := range slices.Sorted(maps.Keys(used)) {
			doc.Fragments = append(doc.Fragments, fragments[n])
		}
		var buf bytes.Buffer
		formatter.NewFormatter(&buf).FormatQueryDocument(doc)
		body := buf.String()
		out.Operations = append(out.Operations, manifestOperation{ID: hashOf(body), Body: body, Name: op.Name, Type: string(op.Operation)})
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// collectFragments adds to used every fragment set spreads, transitively.
func collectFragments(set ast.SelectionSet, fragments map[string]*ast.FragmentDefinition, used map[string]bool) error {
	for _, sel := range set {
		var sub ast.SelectionSet
		switch s := sel.(type) {
		case *ast.Field:
			sub = s.SelectionSet
		case *ast.InlineFragment:
			sub = s.SelectionSet
		case *ast.FragmentSpread:
			if used[s.Name] {
				continue
			}
			f, ok := fragments[s.Name]
			if !ok {
				return fmt.Errorf("uses fragment %s, which none of the files defines", s.Name)
			}
			used[s.Name] = true
			sub = f.SelectionSet
		}
		if err := collectFragments(sub, fragments, used); err != nil {
			return err
		}
	}
	return nil
}
