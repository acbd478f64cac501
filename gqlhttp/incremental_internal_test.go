package gqlhttp

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/formatter"
	"github.com/vektah/gqlparser/v2/parser"

	respbudget "paygraph/graph/budget"
)

// TestAcceptsIncremental: multipart/mixed as Apollo Client 4 and urql send
// it, and what does not take the 2022-08-24 payloads.
func TestAcceptsIncremental(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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

// TestIncrementalCutsPart: the part that would take the stream past
// maxBytes is not written, after a part that fitted was: the stream ends
// there with RESPONSE_TOO_LARGE. The results come from a fake executor,
// one when the client has read the part before it.
func TestIncrementalCutsPart(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	path := ast.Path{ast.PathName("payments"), ast.PathName("nodes"), ast.PathIndex(0), ast.PathName("customer")}
	big := `{"address":"` + strings.Repeat("x", 2000) + `"}`
	next := make(chan *graphql.Response)
	responses := func(ctx context.Context) *graphql.Response {
		select {
		case r := <-next:
			return r
		case <-ctx.Done():
			return nil
		}
	}
	const maxBytes = 3000
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeIncremental(r.Context(), w, responses, maxBytes)
	}))
	defer srv.Close()
	go func() { next <- &graphql.Response{Data: json.RawMessage(`{"payments":{}}`), HasNext: &yes} }()
	res, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	br := bufio.NewReader(res.Body)
	readPart := func() string { // up to and with the boundary after it
		var b strings.Builder
		for !strings.HasSuffix(b.String(), "}\r\n---") {
			c, err := br.ReadByte()
			if err != nil {
				t.Fatalf("stream ended: %v: %q", err, b.String())
			}
			b.WriteByte(c)
		}
		return b.String()
	}
	first := readPart()
	next <- &graphql.Response{Data: json.RawMessage(big), Path: path, HasNext: &yes}
	second := readPart()
	next <- &graphql.Response{Data: json.RawMessage(big), Path: path, HasNext: &no}
	rest, _ := io.ReadAll(br)
	if n := len(first) + len(second); n > maxBytes {
		t.Errorf("%d bytes before the cut; budget %d", n, maxBytes)
	}
	if !strings.Contains(second, `"incremental":[{"data":{"address":"xx`) {
		t.Errorf("second part: %.200q", second)
	}
	want := "\r\nContent-Type: application/json; charset=utf-8\r\n\r\n" +
		`{"errors":[{"message":"` + respbudget.TooLarge(maxBytes).Message + `","extensions":{"code":"RESPONSE_TOO_LARGE"}}],"hasNext":false}` +
		"\r\n-----\r\n"
	if string(rest) != want {
		t.Errorf("after the second part:\n%q\nwant\n%q", rest, want)
	}
}
