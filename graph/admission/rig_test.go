package admission

import (
	"os"
	"testing"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
	"github.com/vektah/gqlparser/v2/validator"

	"paygraph/internal/gqltest"
	"paygraph/internal/testenv"
)

// testSchema is the gateway's schema (schema.graphqls at the module root).
var testSchema = func() *ast.Schema {
	b, err := os.ReadFile("../../schema.graphqls")
	if err != nil {
		panic(err)
	}
	return gqlparser.MustLoadSchema(&ast.Source{Name: "schema.graphqls", Input: string(b)})
}()

// validated parses and validates query against testSchema.
func validated(tb testing.TB, query string) *ast.QueryDocument {
	tb.Helper()
	doc, err := parser.ParseQuery(&ast.Source{Input: query})
	if err != nil {
		tb.Fatal(err)
	}
	if errs := validator.ValidateWithRules(testSchema, doc, nil); len(errs) > 0 {
		tb.Fatalf("%s: %v", query, errs)
	}
	return doc
}

const introspectionQuery = gqltest.IntrospectionQuery

// reportCPU reports the process's CPU time per iteration (testenv.ProcessCPU).
func reportCPU(b *testing.B) func() {
	start := testenv.ProcessCPU()
	return func() { b.ReportMetric(float64(testenv.ProcessCPU()-start)/float64(b.N), "cpu-ns/op") }
}
