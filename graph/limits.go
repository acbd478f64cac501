package graph

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// Codes of the query-limit refusals, alongside gqlgen's own
// COMPLEXITY_LIMIT_EXCEEDED for the complexity limit.
const (
	CodeDepthLimit       = "DEPTH_LIMIT_EXCEEDED"
	CodeFieldLimit       = "FIELD_LIMIT_EXCEEDED"
	CodeQueryLengthLimit = "QUERY_TOO_LARGE"
)

// QueryLimits refuses, before any resolver runs, operations that are too
// deep, select too many fields (aliases included), or whose text is too
// long. Complexity (the REST fan-out estimate) is gqlgen's own extension.
type QueryLimits struct {
	MaxDepth       int
	MaxFields      int
	MaxQueryLength int
}

var (
	_ graphql.HandlerExtension          = QueryLimits{}
	_ graphql.OperationParameterMutator = QueryLimits{}
	_ graphql.OperationContextMutator   = QueryLimits{}
)

func (QueryLimits) ExtensionName() string                          { return "QueryLimits" }
func (QueryLimits) Validate(schema graphql.ExecutableSchema) error { return nil }

// MutateOperationParameters runs before parsing, so a huge query costs
// nothing but its bytes.
func (l QueryLimits) MutateOperationParameters(ctx context.Context, p *graphql.RawParams) *gqlerror.Error {
	if l.MaxQueryLength > 0 && len(p.Query) > l.MaxQueryLength {
		err := gqlerror.Errorf("query is %d bytes long, more than the limit of %d", len(p.Query), l.MaxQueryLength)
		errcode.Set(err, CodeQueryLengthLimit)
		return err
	}
	return nil
}

// MutateOperationContext runs after validation and before execution.
func (l QueryLimits) MutateOperationContext(ctx context.Context, opCtx *graphql.OperationContext) *gqlerror.Error {
	op := opCtx.Doc.Operations.ForName(opCtx.OperationName)
	if op == nil {
		return nil
	}
	w := selectionWalker{doc: opCtx.Doc, maxFields: l.MaxFields, maxDepth: l.MaxDepth, fragments: map[string]bool{}}
	w.walk(op.SelectionSet, 1)
	switch {
	case l.MaxDepth > 0 && w.depth > l.MaxDepth:
		err := gqlerror.Errorf("query is %d levels deep, more than the limit of %d", w.depth, l.MaxDepth)
		errcode.Set(err, CodeDepthLimit)
		return err
	case l.MaxFields > 0 && w.fields > l.MaxFields:
		err := gqlerror.Errorf("query selects more than %d fields (aliases count one each)", l.MaxFields)
		errcode.Set(err, CodeFieldLimit)
		return err
	}
	return nil
}

type selectionWalker struct {
	doc                 *ast.QueryDocument
	fields, depth       int
	maxFields, maxDepth int
	fragments           map[string]bool // on the current path, to stop cycles
}

// walk counts every field as it would execute: a fragment spread counts
// each time it is spread. It stops early once a limit is passed, so a
// fragment bomb cannot make the walk itself expensive.
func (w *selectionWalker) walk(set ast.SelectionSet, depth int) {
	for _, sel := range set {
		if w.over() {
			return
		}
		switch s := sel.(type) {
		case *ast.Field:
			w.fields++
			w.depth = max(w.depth, depth)
			if len(s.SelectionSet) > 0 {
				w.walk(s.SelectionSet, depth+1)
			}
		case *ast.InlineFragment:
			w.walk(s.SelectionSet, depth)
		case *ast.FragmentSpread:
			if w.fragments[s.Name] {
				continue
			}
			f := w.doc.Fragments.ForName(s.Name)
			if f == nil {
				continue
			}
			w.fragments[s.Name] = true
			w.walk(f.SelectionSet, depth)
			delete(w.fragments, s.Name)
		}
	}
}

func (w *selectionWalker) over() bool {
	return (w.maxFields > 0 && w.fields > w.maxFields) || (w.maxDepth > 0 && w.depth > w.maxDepth)
}
