package gqlhttp

import (
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/formatter"
	"github.com/vektah/gqlparser/v2/parser"

	"strings"
)

// TestAcceptsIncremental: multipart/mixed as Apollo Client 4 and urql send
// it, and what does not take the 2022-08-24 payloads.
func TestAcceptsIncremental(t *testing.T) {
	for _, tt := range []struct {
		name, accept string
		want         bool
	}{
		{"Apollo Client 4", "multipart/mixed;deferSpec=20220824,application/graphql-response+json,application/json;q=0.9", true},
		{"urql", "multipart/mixed, application/graphql-response+json, application/graphql+json, application/json", true},
		{"quoted deferSpec, spaces", `application/json, Multipart/Mixed; deferSpec="20220824"`, true},
		{"Apollo's subscriptions only", "multipart/mixed;boundary=graphql;subscriptionSpec=1.0,application/json", true},
		{"none", "", false},
		{"application/json", "application/json", false},
		{"another deferSpec", "multipart/mixed;deferSpec=20230621", false},
		{"q=0", "multipart/mixed;q=0, application/json", false},
		{"q=0.000", "multipart/mixed;q=0.000", false},
		{"q=0.5", "multipart/mixed;q=0.5", true},
		{"multipart/form-data", "multipart/form-data", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := acceptsIncremental(tt.accept); got != tt.want {
				t.Errorf("acceptsIncremental(%q) = %v, want %v", tt.accept, got, tt.want)
			}
		})
	}
}

// TestWithoutDefer: the operation and fragments run without their @defer
// directives (other directives kept), and the shared document the query
// cache holds is left as it was.
func TestWithoutDefer(t *testing.T) {
	for _, tt := range []struct{ name, query, want string }{
		{"inline fragment", `{ a { b ... @defer(label: "x") { c } } }`, `{ a { b ... { c } } }`},
		{"spread and fragment", `query Q { a { ...F @defer @include(if: true) } } fragment F on A { c ... @defer { d } }`,
			`query Q { a { ... F @include(if: true) } } fragment F on A { c ... { d } }`},
		{"nothing deferred", `{ a { b } }`, `{ a { b } }`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := parser.ParseQuery(&ast.Source{Input: tt.query})
			if err != nil {
				t.Fatal(err)
			}
			before := format(doc)
			rc := &graphql.OperationContext{RawQuery: tt.query, Doc: doc, Operation: doc.Operations[0]}
			withoutDefer(rc)
			want, _ := parser.ParseQuery(&ast.Source{Input: tt.want})
			if got := format(rc.Doc); got != format(want) {
				t.Errorf("document run:\n%s\nwant\n%s", got, format(want))
			}
			if rc.Operation != rc.Doc.Operations[0] {
				t.Error("rc.Operation is not the document's operation")
			}
			if format(doc) != before {
				t.Errorf("the shared document changed:\n%s", format(doc))
			}
		})
	}
}

func format(doc *ast.QueryDocument) string {
	var b strings.Builder
	formatter.NewFormatter(&b).FormatQueryDocument(doc)
	return b.String()
}
