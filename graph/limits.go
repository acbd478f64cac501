package graph

import (
	"context"
	"paygraph/graph/errcode"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	gqlerrcode "github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/parser"
)

// QueryLimits are the limits a document must pass before it is validated:
// validation costs more than parsing (gqlparser's overlapping-fields rule
// is quadratic in the fields that share a response name), so these are
// checked on the parsed document first. Zero means the default
// (ServerConfig).
type QueryLimits struct {
	MaxDepth       int // deepest field nesting of any operation or fragment
	MaxFields      int // most fields one operation selects as it executes: aliases count, a fragment counts each time it is spread
	MaxQueryLength int // longest query text, in bytes
}

// The limits on the shape of a document that no setting changes: each
// bounds the work of one validation rule on a document that passes the
// settings' limits (BenchmarkValidateWorstCase measures what they allow).
const (
	// parserTokenLimit bounds the lexer's work on one document.
	parserTokenLimit = 20000
	// maxSameResponseName bounds the fields that share one response name at
	// one place (one response path, fragments and inline fragments
	// flattened, as the executor merges them). The overlapping-fields rule
	// compares every pair of them, and reports each pair that differs, so
	// its work is at most maxSameResponseName/2 comparisons a field.
	maxSameResponseName = 32
	// maxFragments bounds the fragment definitions of a document: the
	// overlapping-fields rule compares fragments spread together pairwise,
	// following each one's nested spreads, up to every pair of fragments.
	maxFragments = 100
	// docWorkPerField bounds, as a multiple of MaxFields, every selection
	// (field, fragment spread, inline fragment) of every operation and
	// fragment definition of the document, counted as each would execute:
	// validation walks each definition, and a document may hold many, or
	// fragments spread into each other that select nothing.
	docWorkPerField = 10
	// maxIntrospectionDepth bounds the nesting below __schema and __type
	// (and in fragments on introspection types) instead of MaxDepth:
	// introspection makes no REST call, and graphql-js's
	// getIntrospectionQuery alone is as deep as the default MaxDepth (15)
	// with its default typeDepth of 9, so a client asking for a deeper
	// typeDepth was refused. 32 serves typeDepth up to 25, far past any
	// type of this schema ([PaymentEdge!]! wraps three times); MaxFields
	// and the document's work bound still apply to every introspection
	// field.
	maxIntrospectionDepth = 32
	// maxSchemaRoots bounds the __schema root fields of one operation
	// (aliases and fragments count each time they are spread): one
	// __schema of the whole schema answers about 115 times its query's
	// bytes, so 54 aliases of it in an 8.6 KB query (within MAX_FIELDS)
	// rendered 985 KB. Every introspection client asks for one.
	maxSchemaRoots = 1
)

// queryLimits is the gqlgen extension that applies QueryLimits, the
// complexity limit and the parsed-query cache's admission. Its two hooks
// are the two ends of parsing and validation:
//
//   - MutateOperationParameters runs before gqlgen parses and validates the
//     query (executor.parseQuery). Unless the document is already cached
//     (it passed then), it parses it (with the token limit) and refuses
//     what is too long, too deep, too wide or too repetitive; only a
//     document that passes reaches validation.
//   - MutateOperationContext runs after validation, with the variables:
//     the REST-call estimate (complexity.go), then, the last limit passed,
//     the cache commits the document gqlgen staged in it, and the
//     estimate is recorded on the operation for the edge to charge to the
//     merchant's rate limit (ratelimit.go).
type queryLimits struct {
	QueryLimits
	maxComplexity int
	cache         *queryCache
	cost          CostReceipts
}

var (
	_ graphql.HandlerExtension          = queryLimits{}
	_ graphql.OperationParameterMutator = queryLimits{}
	_ graphql.OperationContextMutator   = queryLimits{}
)

func (queryLimits) ExtensionName() string                          { return "QueryLimits" }
func (queryLimits) Validate(schema graphql.ExecutableSchema) error { return nil }

func (l queryLimits) MutateOperationParameters(ctx context.Context, p *graphql.RawParams) *gqlerror.Error {
	if len(p.Query) > l.MaxQueryLength {
		return limitError(errcode.QueryLengthLimit, "query is %d bytes long, more than the limit of %d", len(p.Query), l.MaxQueryLength)
	}
	doc, cached := l.cache.lookup(ctx, p.Query)
	if !cached {
		var err error
		doc, err = parser.ParseQueryWithTokenLimit(&ast.Source{Input: p.Query}, parserTokenLimit)
		if err != nil {
			// The error gqlgen's own parse would give (it would parse again).
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
	// The REST calls that the root fields alone will make, from the raw
	// variables: a document that is over the complexity limit already is
	// refused before validation and before gqlgen coerces its variables
	// (item 3's attack sends 4,900 ids in 220 KB of variables; coercing
	// them cost more CPU than anything else its refusal did).
	calls := rootRESTCalls(doc, p.OperationName, p.Variables)
	if calls > l.maxComplexity {
		return limitError(errcode.ComplexityLimit, "query may make %d REST calls, more than the limit of %d", calls, l.maxComplexity)
	}
	// A caller that may make no REST call (a pair the REST API refused, or
	// not yet accepted and over the shared budgets) is refused here, before
	// validation, coercion and the plan; a dry run spends nothing.
	// (The edge asks: RootRESTCalls.)
	if dry, _ := p.Extensions[DryRunExtension].(bool); calls > 0 && !dry && graphql.HasOperationContext(ctx) {
		graphql.GetOperationContext(ctx).Stats.SetExtension(rootCallsExt, calls)
	}
	return nil
}

func (l queryLimits) MutateOperationContext(ctx context.Context, opCtx *graphql.OperationContext) *gqlerror.Error {
	if opCtx.Operation == nil {
		return nil
	}
	// The caller's scope and level, read once (each is a look-up
	// through the whole context when the request has no session token).
	var c caller
	c.scope, c.hasScope = scopeIn(ctx)
	c.level = customerDataIn(ctx, c.scope, c.hasScope)
	calls := restCallsAt(opCtx.Doc, opCtx.Operation, opCtx.Variables, c.level)
	loaders, _ := ctx.Value(loadersKey{}).(*Loaders)
	dry := loaders != nil && isDryRun(opCtx)
	if calls > l.maxComplexity {
		if dry {
			l.plan(loaders, opCtx, calls, true, c) // the refusal's answer carries the plan
		}
		return limitError(errcode.ComplexityLimit, "query may make %d REST calls, more than the limit of %d", calls, l.maxComplexity)
	}
	l.cache.commit(opCtx)
	// The estimate (costplan.go): every distinct REST call the operation
	// can make, counted once however many fields ask for it.
	estimate := calls
	if loaders != nil {
		plan := l.plan(loaders, opCtx, calls, dry, c)
		if dry {
			// A dry run spends no REST-call budget and runs nothing: its
			// operation is replaced by one that selects nothing, and
			// costExtension answers its plan. The edge peeks at the
			// merchant's budget (NoteDryRunBudget); its refusal is
			// answered as the real operation's would be.
			op := opCtx.Operation
			opCtx.Operation = &ast.OperationDefinition{Operation: ast.Query, Name: op.Name, Position: op.Position}
			setEstimate(opCtx, RESTCallEstimate{Calls: plan.total, DryRun: true})
			return nil
		}
		estimate = plan.total
	}
	// The estimate, for the edge to charge to the merchant's rate limit
	// (ratelimit.go): a document refused by a limit above has none.
	setEstimate(opCtx, RESTCallEstimate{Calls: estimate})
	// At most one distinct REST call (the estimate: 20 aliases of one id
	// are one): its one load has nothing to batch with. A load of another
	// key (the estimate never counts less than the operation makes, but
	// the loaders do not rely on it) goes to the dataloader as ever.
	if estimate <= 1 && opCtx.Operation.Operation == ast.Query && loaders != nil {
		loaders.Alone(opCtx)
	}
	return nil
}

func limitError(code, format string, args ...any) *gqlerror.Error {
	err := gqlerror.Errorf(format, args...)
	gqlerrcode.Set(err, code)
	return err
}

// check walks every operation and every fragment definition of doc (the
// validator walks each of them) as it would execute, fragments expanded at
// each spread, and refuses it at the first limit passed. The walk stops
// there too, so its own cost is bounded by the limits it checks.
func (l queryLimits) check(doc *ast.QueryDocument) *gqlerror.Error {
	if len(doc.Fragments) > maxFragments {
		return limitError(errcode.QueryLengthLimit, "the document defines %d fragments, more than the limit of %d", len(doc.Fragments), maxFragments)
	}
	w := docWalker{
		fragments: make(map[string]*ast.FragmentDefinition, len(doc.Fragments)),
		onPath:    make(map[string]bool),
		paths:     make(map[pathKey]int32),
		maxDepth:  l.MaxDepth,
		maxFields: l.MaxFields,
		maxWork:   docWorkPerField * l.MaxFields,
	}
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
		if isIntrospectionType(f.TypeCondition) {
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
	// paths numbers the response paths of the current root, from 1 (0 is
	// the root): a path is its parent's number and a response name.
	// counts[n-1] is the number of fields at path n.
	paths                        map[pathKey]int32
	counts                       []int32
	maxDepth, maxFields, maxWork int
	fields, work                 int // fields of the current root; selections of the whole document
	// introStart is the depth of the first field below __schema or
	// __type (0: not inside introspection); from there depth counts
	// against maxIntrospectionDepth instead of maxDepth.
	introStart int
	schemas    int // __schema root fields of the current root
	err        *gqlerror.Error
}

type pathKey struct {
	parent int32
	name   string
}

func (w *docWalker) root(set ast.SelectionSet) *gqlerror.Error {
	w.fields = 0
	w.schemas = 0
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
			w.err = limitError(errcode.FieldLimit, "the document's operations and fragments select more than %d fields and fragments in all, counted as each would execute", w.maxWork)
			return
		}
		switch s := sel.(type) {
		case *ast.Field:
			if w.fields++; w.fields > w.maxFields {
				w.err = limitError(errcode.FieldLimit, "query selects more than %d fields (aliases count one each, fragments each time they are spread)", w.maxFields)
				return
			}
			if depth == 1 && s.Name == "__schema" {
				if w.schemas++; w.schemas > maxSchemaRoots {
					w.err = limitError(errcode.FieldLimit, "query selects __schema more than %d time (aliases count one each, fragments each time they are spread): ask for the schema once", maxSchemaRoots)
					return
				}
			}
			if w.introStart > 0 {
				if depth-w.introStart+1 > maxIntrospectionDepth {
					w.err = limitError(errcode.DepthLimit, "introspection is more than %d levels deep", maxIntrospectionDepth)
					return
				}
			} else if depth > w.maxDepth {
				w.err = limitError(errcode.DepthLimit, "query is more than %d levels deep", w.maxDepth)
				return
			}
			name := s.Alias
			if name == "" {
				name = s.Name
			}
			k := pathKey{parent, name}
			path, ok := w.paths[k]
			if !ok {
				w.counts = append(w.counts, 0)
				path = int32(len(w.counts))
				w.paths[k] = path
			}
			if w.counts[path-1]++; w.counts[path-1] > maxSameResponseName {
				w.err = limitError(errcode.FieldLimit, "more than %d fields share the response name %q at one place (aliases tell them apart)", maxSameResponseName, name)
				return
			}
			if len(s.SelectionSet) > 0 {
				if w.introStart == 0 && (s.Name == "__schema" || s.Name == "__type") {
					w.introStart = depth + 1
					w.walk(s.SelectionSet, depth+1, path)
					w.introStart = 0
				} else {
					w.walk(s.SelectionSet, depth+1, path)
				}
			}
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

// isIntrospectionType reports whether name is one of GraphQL's
// introspection types (__Schema, __Type, __Field, ...): names starting
// with two underscores are reserved for them.
func isIntrospectionType(name string) bool { return strings.HasPrefix(name, "__") }
