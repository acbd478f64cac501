// Package admission decides, before any resolver, whether an operation may
// run and what it may cost: the query limits, the parsed-query cache, the
// complexity limit, the plan of its distinct REST calls with the estimate
// the edge charges, and the cap on a response's error list.
package admission

import (
	"cmp"
	"context"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	gqlerrcode "github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/parser"

	"paygraph/graph/errcode"
)

// QueryLimits are the limits a document must pass before validation, which
// costs more than parsing; zero means the default (graph.ServerConfig).
type QueryLimits struct {
	MaxDepth       int // deepest field nesting of any operation or fragment
	MaxFields      int // most fields one operation selects as it executes: aliases count, a fragment counts each time it is spread
	MaxQueryLength int // longest query text, in bytes
}

// Fixed limits on a document's shape, each bounding one validation rule's
// work (BenchmarkValidateWorstCase).
const (
	ParserTokenLimit = 20000 // the lexer's work on one document
	// MaxSameResponseName bounds the fields sharing one response name at one
	// place, which the overlapping-fields rule compares pairwise.
	MaxSameResponseName = 32
	MaxFragments        = 100 // fragment definitions, also compared pairwise
	// docWorkPerField times MaxFields bounds every selection of the whole
	// document, counted as each would execute.
	docWorkPerField = 10
	// maxIntrospectionDepth replaces MaxDepth below __schema and __type, so
	// getIntrospectionQuery (typeDepth up to 25) passes.
	maxIntrospectionDepth = 32
	maxSchemaRoots        = 1 // __schema root fields: each answers many times its query's bytes
)

// Limits is the gqlgen extension that admits an operation: before
// validation it parses an uncached document with the token limit and
// refuses what is too long, deep, wide or repetitive; after validation it
// applies the complexity limit, caches the document, and records the plan
// and the estimate for the edge to charge (ratelimit.go).
type Limits struct {
	QueryLimits
	MaxComplexity       int
	Cache               *QueryCache
	Receipts, Inspector bool                             // COST_RECEIPTS and REST_INSPECTOR
	Caller              func(ctx context.Context) Caller // what ctx says of its caller
	// Operation keeps what admission decided; nil: no plan and no dry run.
	Operation func(ctx context.Context) Operation
}

// Caller is an operation's caller: its session token's scope (HasScope
// false: none) and whether its level withholds customer.address.
type Caller struct {
	Scope     Scope
	HasScope  bool
	NoAddress bool
}

// Scope is the part of a session token's scope the plan reads.
type Scope interface {
	AllowsList() bool
	AllowsPaymentLink(id string) bool
	SessionToLearn() (idOrRef string, ok bool)
}

// Operation keeps what admission decided for one operation.
type Operation interface {
	// Admit records the operation's plan (and a dry run's answer).
	Admit(op *graphql.OperationContext, a Admitted)
	// Alone tells that op makes at most one distinct REST call.
	Alone(op *graphql.OperationContext)
}

// Admitted is an operation's plan with its MAX_COMPLEXITY figure and limit.
type Admitted struct {
	Plan                      *Plan
	Complexity, MaxComplexity int
	DryRun                    bool
	Receipts, Inspector       bool
}

// DryRunExtension is the request extension that asks for the plan instead
// of the answer, no REST call made and no budget spent.
const DryRunExtension = "dryRun"

var _ graphql.OperationParameterMutator = Limits{}
var _ graphql.OperationContextMutator = Limits{}

func (Limits) ExtensionName() string                          { return "QueryLimits" }
func (Limits) Validate(schema graphql.ExecutableSchema) error { return nil }

func (l Limits) MutateOperationParameters(ctx context.Context, p *graphql.RawParams) *gqlerror.Error {
	if len(p.Query) > l.MaxQueryLength {
		return LimitError(errcode.QueryLengthLimit, "query is %d bytes long, more than the limit of %d", len(p.Query), l.MaxQueryLength)
	}
	doc, cached := l.Cache.lookup(ctx, p.Query)
	if !cached {
		var err error
		doc, err = parser.ParseQueryWithTokenLimit(&ast.Source{Input: p.Query}, ParserTokenLimit)
		if err != nil {
			// The error gqlgen's own parse would give.
			if gqlErr, ok := err.(*gqlerror.Error); ok {
				gqlerrcode.Set(gqlErr, gqlerrcode.ParseFailed)
				return gqlErr
			}
			return nil
		}
		if err := l.check(doc); err != nil {
			return err
		}
	}
	// The root fields' REST calls alone may refuse it before validation.
	if n := overEntities(doc, p.OperationName, p.Variables); n > 0 {
		return LimitError(errcode.ComplexityLimit, "_entities has %d representations, more than the limit of %d", n, MaxNodes)
	}
	calls := rootRESTCalls(doc, p.OperationName, p.Variables)
	if calls > l.MaxComplexity {
		return LimitError(errcode.ComplexityLimit, "query may make %d REST calls, more than the limit of %d", calls, l.MaxComplexity)
	}
	// For the edge to refuse a caller with no REST call left (RootRESTCalls).
	if dry, _ := p.Extensions[DryRunExtension].(bool); calls > 0 && !dry && graphql.HasOperationContext(ctx) {
		graphql.GetOperationContext(ctx).Stats.SetExtension(rootCallsExt, calls)
	}
	return nil
}

func (l Limits) MutateOperationContext(ctx context.Context, opCtx *graphql.OperationContext) *gqlerror.Error {
	if opCtx.Operation == nil {
		return nil
	}
	c := l.Caller(ctx)
	calls := restCallsAt(opCtx.Doc, opCtx.Operation, opCtx.Variables, c.NoAddress)
	rec := l.Operation(ctx)
	dry, _ := opCtx.Extensions[DryRunExtension].(bool)
	dry = dry && rec != nil
	if calls > l.MaxComplexity {
		if dry {
			l.plan(rec, opCtx, calls, true, c) // the refusal's answer carries the plan
		}
		return LimitError(errcode.ComplexityLimit, "query may make %d REST calls, more than the limit of %d", calls, l.MaxComplexity)
	}
	l.Cache.commit(opCtx)
	estimate := calls
	if rec != nil {
		estimate = l.plan(rec, opCtx, calls, dry, c).total
	}
	opCtx.Stats.SetExtension(estimateExt, estimate) // read by OperationEstimate
	if dry {
		// A dry run selects nothing; the receipt answers its plan.
		opCtx.Stats.SetExtension(dryRunExt, true)
		op := opCtx.Operation
		opCtx.Operation = &ast.OperationDefinition{Operation: ast.Query, Name: op.Name, Position: op.Position}
	} else if estimate <= 1 && opCtx.Operation.Operation == ast.Query && rec != nil {
		rec.Alone(opCtx) // one distinct REST call has nothing to batch with
	}
	return nil
}

// plan plans an admitted operation (or a dry run) and records it.
func (l Limits) plan(rec Operation, opCtx *graphql.OperationContext, complexity int, dry bool, c Caller) *Plan {
	p := planOperation(opCtx.Doc, opCtx.Operation, opCtx.Variables, c)
	rec.Admit(opCtx, Admitted{Plan: p, Complexity: complexity, MaxComplexity: l.MaxComplexity, DryRun: dry,
		Receipts: l.Receipts, Inspector: l.Inspector})
	return p
}

// LimitError is a refusal by a limit, with its contract code.
func LimitError(code, format string, args ...any) *gqlerror.Error {
	err := gqlerror.Errorf(format, args...)
	gqlerrcode.Set(err, code)
	return err
}

// check walks every definition of doc as it would execute, fragments
// expanded at each spread, and stops at the first limit passed.
func (l Limits) check(doc *ast.QueryDocument) *gqlerror.Error {
	if len(doc.Fragments) > MaxFragments {
		return LimitError(errcode.QueryLengthLimit, "the document defines %d fragments, more than the limit of %d", len(doc.Fragments), MaxFragments)
	}
	w := docWalker{fragments: make(map[string]*ast.FragmentDefinition, len(doc.Fragments)), onPath: make(map[string]bool),
		paths: make(map[pathKey]int32), maxDepth: l.MaxDepth, maxFields: l.MaxFields, maxWork: docWorkPerField * l.MaxFields}
	for _, f := range doc.Fragments {
		if _, ok := w.fragments[f.Name]; !ok { // the first of a name, as the validator takes
			w.fragments[f.Name] = f
		}
	}
	for _, op := range doc.Operations {
		if err := w.root(op.SelectionSet); err != nil {
			return err
		}
	}
	for _, f := range doc.Fragments {
		w.onPath[f.Name] = true
		if strings.HasPrefix(f.TypeCondition, "__") {
			w.introStart = 1 // validation keeps such fragments inside introspection
		}
		err := w.root(f.SelectionSet)
		w.introStart = 0
		delete(w.onPath, f.Name)
		if err != nil {
			return err
		}
	}
	return nil
}

type docWalker struct {
	fragments map[string]*ast.FragmentDefinition
	onPath    map[string]bool // fragments being expanded, to stop cycles (which validation refuses)
	// paths numbers the current root's response paths from 1 (0: the root)
	// by parent and response name; counts[n-1] counts the fields at path n.
	paths                        map[pathKey]int32
	counts                       []int32
	maxDepth, maxFields, maxWork int
	fields, work                 int // fields of the current root; selections of the whole document
	// introStart is the depth of the first field below __schema or __type
	// (0: outside), from which maxIntrospectionDepth applies.
	introStart int
	schemas    int // __schema root fields of the current root
	err        *gqlerror.Error
}

type pathKey struct {
	parent int32
	name   string
}

func (w *docWalker) root(set ast.SelectionSet) *gqlerror.Error {
	w.fields, w.schemas = 0, 0
	clear(w.paths)
	w.counts = w.counts[:0]
	w.walk(set, 1, 0)
	return w.err
}

func (w *docWalker) walk(set ast.SelectionSet, depth int, parent int32) {
	for _, sel := range set {
		if w.err != nil {
			return
		}
		if w.work++; w.work > w.maxWork {
			w.err = LimitError(errcode.FieldLimit, "the document's operations and fragments select more than %d fields and fragments in all, counted as each would execute", w.maxWork)
			return
		}
		switch s := sel.(type) {
		case *ast.Field:
			w.fields++
			if depth == 1 && s.Name == "__schema" {
				w.schemas++
			}
			name := cmp.Or(s.Alias, s.Name)
			k := pathKey{parent, name}
			path, ok := w.paths[k]
			if !ok {
				w.counts = append(w.counts, 0)
				path = int32(len(w.counts))
				w.paths[k] = path
			}
			w.counts[path-1]++
			// The first limit passed, in this order, is the one reported.
			switch {
			case w.fields > w.maxFields:
				w.err = LimitError(errcode.FieldLimit, "query selects more than %d fields (aliases count one each, fragments each time they are spread)", w.maxFields)
			case w.schemas > maxSchemaRoots:
				w.err = LimitError(errcode.FieldLimit, "query selects __schema more than %d time (aliases count one each, fragments each time they are spread): ask for the schema once", maxSchemaRoots)
			case w.introStart > 0 && depth-w.introStart+1 > maxIntrospectionDepth:
				w.err = LimitError(errcode.DepthLimit, "introspection is more than %d levels deep", maxIntrospectionDepth)
			case w.introStart == 0 && depth > w.maxDepth:
				w.err = LimitError(errcode.DepthLimit, "query is more than %d levels deep", w.maxDepth)
			case w.counts[path-1] > MaxSameResponseName:
				w.err = LimitError(errcode.FieldLimit, "more than %d fields share the response name %q at one place (aliases tell them apart)", MaxSameResponseName, name)
			}
			if w.err != nil {
				return
			}
			intro := w.introStart
			if intro == 0 && (s.Name == "__schema" || s.Name == "__type") {
				w.introStart = depth + 1
			}
			w.walk(s.SelectionSet, depth+1, path)
			w.introStart = intro
		case *ast.InlineFragment:
			w.walk(s.SelectionSet, depth, parent)
		case *ast.FragmentSpread:
			f := w.fragments[s.Name]
			if f == nil || w.onPath[s.Name] {
				continue
			}
			w.onPath[s.Name] = true
			w.walk(f.SelectionSet, depth, parent)
			delete(w.onPath, s.Name)
		}
	}
}
