package trusteddocs

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
	"github.com/vektah/gqlparser/v2/validator"
)

const (
	operationsFile = `# the app's screens
query PaymentPage($first: Int = 20, $after: String) {
  payments(first: $first, after: $after) {
    edges { cursor node { ...PaymentFields } }
    pageInfo { hasNextPage endCursor }
  }
}

query PaymentDetail($id: ID!) {
  payment(id: $id) { ...PaymentFields customer { address } }
}
`
	fragmentsFile = `fragment PaymentFields on Payment { id status amount { ...MoneyFields } }
fragment MoneyFields on Money { amount paisa currency }
fragment Unused on Payment { createdAt }
`
)

// schema is the gateway's schema, which every built body must satisfy.
func schema(t *testing.T) *ast.Schema {
	t.Helper()
	sdl, err := os.ReadFile(filepath.Join("..", "schema.graphqls"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := validator.LoadSchema(append([]*ast.Source{validator.Prelude}, &ast.Source{Name: "schema.graphqls", Input: string(sdl)})...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestBuildManifest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ops, frags := filepath.Join(dir, "operations.graphql"), filepath.Join(dir, "fragments.graphql")
	for p, c := range map[string]string{ops: operationsFile, frags: fragmentsFile} {
		if err := os.WriteFile(p, []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	out, err := BuildManifest([]string{ops, frags})
	if err != nil {
		t.Fatal(err)
	}
	var got apolloManifest
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}

	t.Run("one entry per operation, sorted by name", func(t *testing.T) {
		t.Parallel()
		if got.Format != FormatApollo || got.Version != 1 || len(got.Operations) != 2 ||
			got.Operations[0].Name != "PaymentDetail" || got.Operations[1].Name != "PaymentPage" {
			t.Fatalf("%s", out)
		}
		for _, op := range got.Operations {
			if op.Type != "query" || op.ID != hashOf(op.Body) {
				t.Fatalf("%s: type %q, id %q, want query and the body's sha256", op.Name, op.Type, op.ID)
			}
		}
	})

	t.Run("each body holds the fragments it uses, transitively, and no other", func(t *testing.T) {
		t.Parallel()
		for _, op := range got.Operations {
			doc, err := parser.ParseQuery(&ast.Source{Input: op.Body})
			if err != nil {
				t.Fatalf("%s: %v", op.Name, err)
			}
			var names []string
			for _, f := range doc.Fragments {
				names = append(names, f.Name)
			}
			if len(doc.Operations) != 1 || doc.Operations[0].Name != op.Name || strings.Join(names, ",") != "MoneyFields,PaymentFields" {
				t.Fatalf("%s: operations %d, fragments %v", op.Name, len(doc.Operations), names)
			}
		}
	})

	t.Run("each body is valid against the gateway's schema", func(t *testing.T) {
		t.Parallel()
		s := schema(t)
		for _, op := range got.Operations {
			if errs := validator.ValidateWithRules(s, mustParse(t, op.Body), nil); len(errs) > 0 {
				t.Fatalf("%s: %v", op.Name, errs)
			}
		}
	})

	t.Run("the output loads and is served by id and by hash", func(t *testing.T) {
		t.Parallel()
		st, err := New(Config{Mode: Enforce, Path: writeFile(t, "built.json", string(out))})
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range got.Operations {
			for _, r := range []Request{{DocumentID: op.ID}, {DocumentID: "sha256:" + op.ID}, {SHA256Hash: op.ID}, {Query: op.Body}} {
				if d := st.Decide(r); d.Action != ServeListed || d.Query != op.Body {
					t.Fatalf("%s by %+v: %+v", op.Name, r, d)
				}
			}
		}
	})

	t.Run("the same files give the same bytes", func(t *testing.T) {
		t.Parallel()
		again, err := BuildManifest([]string{frags, ops})
		if err != nil || string(again) != string(out) {
			t.Fatalf("a second build differs (%v):\n%s\n%s", err, out, again)
		}
	})

	bad := []struct{ name, content, want string }{
		{"an anonymous operation", "{ payments { nodes { id } } }", "no name"},
		{"a fragment no file defines", "query A { payment(id: \"x\") { ...Missing } }", "Missing"},
		{"a schema, not operations", "type Query { a: Int }", "bad.graphql"},
		{"no operation", "fragment F on Payment { id }", "no operation"},
		{"an operation name used twice", "query PaymentPage { __typename }", "PaymentPage is defined in"},
		{"a fragment name used twice", "query B { __typename } fragment MoneyFields on Money { amount }", "MoneyFields is defined in"},
	}
	for _, tc := range bad {
		t.Run("refused: "+tc.name, func(t *testing.T) {
			t.Parallel()
			p := filepath.Join(t.TempDir(), "bad.graphql")
			if err := os.WriteFile(p, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			files := []string{p}
			if strings.Contains(tc.name, "twice") {
				files = []string{ops, frags, p}
			}
			if _, err := BuildManifest(files); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v; want one containing %q", err, tc.want)
			}
		})
	}
	t.Run("refused: a missing file", func(t *testing.T) {
		t.Parallel()
		if _, err := BuildManifest([]string{filepath.Join(t.TempDir(), "none.graphql")}); err == nil {
			t.Fatal("accepted")
		}
	})
}

func mustParse(t *testing.T, q string) *ast.QueryDocument {
	t.Helper()
	doc, err := parser.ParseQuery(&ast.Source{Input: q})
	if err != nil {
		t.Fatal(err)
	}
	return doc
}
