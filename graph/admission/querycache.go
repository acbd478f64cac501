package admission

import (
	"context"
	"math"
	"sync"

	"github.com/99designs/gqlgen/graphql"
	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/vektah/gqlparser/v2/ast"
)

// QueryCache is the parsed-query cache: validated documents by query text,
// LRU, bounded by their estimated heap (docCost). gqlgen adds a document
// before the complexity limit, so Add only stages it and commit stores it
// once every limit passed.
type QueryCache struct {
	mu       sync.Mutex
	lru      *simplelru.LRU[string, cachedDoc]
	bytes    int64 // estimated heap of the documents held
	maxBytes int64
}

type cachedDoc struct {
	doc  *ast.QueryDocument
	cost int64
}

var _ graphql.Cache[*ast.QueryDocument] = (*QueryCache)(nil)

// NewQueryCache returns a cache of at most maxBytes of documents' estimated heap.
func NewQueryCache(maxBytes int64) *QueryCache {
	c := &QueryCache{maxBytes: maxBytes}
	c.lru, _ = simplelru.NewLRU(math.MaxInt32, func(_ string, v cachedDoc) { c.bytes -= v.cost })
	return c
}

// Get is gqlgen's look-up, which takes the document lookup left in the
// operation context without looking the text up again.
func (c *QueryCache) Get(ctx context.Context, query string) (*ast.QueryDocument, bool) {
	if graphql.HasOperationContext(ctx) {
		oc := graphql.GetOperationContext(ctx)
		if doc := oc.Doc; doc != nil {
			oc.Doc = nil // gqlgen sets it from the answer
			if doc.Position != nil && doc.Position.Src != nil && doc.Position.Src.Input == query {
				return doc, true
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.lru.Get(query)
	return v.doc, ok
}

// lookup returns the cached document of query for Limits and leaves it in
// the operation context's Doc (set by gqlgen only later) for Get.
func (c *QueryCache) lookup(ctx context.Context, query string) (*ast.QueryDocument, bool) {
	c.mu.Lock()
	v, ok := c.lru.Get(query)
	c.mu.Unlock()
	if ok && graphql.HasOperationContext(ctx) {
		if oc := graphql.GetOperationContext(ctx); oc.Doc == nil {
			oc.Doc = v.doc
		}
	}
	return v.doc, ok
}

// Peek returns the cached document of query, without making it recent.
func (c *QueryCache) Peek(query string) (*ast.QueryDocument, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.lru.Peek(query)
	return v.doc, ok
}

// stagedKey names the staged document in the operation context's stats.
const stagedKey = "paygraph.queryCache.staged"

type stagedDoc struct {
	query string
	doc   *ast.QueryDocument
}

// Add stages doc in the request; commit stores it.
func (c *QueryCache) Add(ctx context.Context, query string, doc *ast.QueryDocument) {
	if graphql.HasOperationContext(ctx) {
		graphql.GetOperationContext(ctx).Stats.SetExtension(stagedKey, stagedDoc{query, doc})
	}
}

// commit stores the document staged in opCtx, if any and not larger than
// the whole cache, evicting the least recently used to fit.
func (c *QueryCache) commit(opCtx *graphql.OperationContext) {
	s, ok := opCtx.Stats.GetExtension(stagedKey).(stagedDoc)
	if !ok {
		return
	}
	opCtx.Stats.SetExtension(stagedKey, nil)
	cost := docCost(s.query, s.doc)
	if cost > c.maxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lru.Contains(s.query) {
		return // another request cached it meanwhile
	}
	c.lru.Add(s.query, cachedDoc{s.doc, cost})
	c.bytes += cost
	for c.bytes > c.maxBytes {
		c.lru.RemoveOldest()
	}
}

// Stats returns the documents held and their estimated bytes.
func (c *QueryCache) Stats() (docs int, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len(), c.bytes
}

// Heap per AST node of a validated document (BenchmarkQueryCacheCost),
// rounded up: a selection or definition; a value, argument or directive.
const (
	selectionBytes = 420
	valueBytes     = 230
	docBytes       = 1024 // the document, its lists and the cache's entry
)

// docCost estimates the heap doc holds: the query text (shared with the
// key) and its nodes by kind, honest for any shape of document.
func docCost(query string, doc *ast.QueryDocument) int64 {
	n := nodeCount{}
	for _, op := range doc.Operations {
		n.selections++
		for _, v := range op.VariableDefinitions {
			n.values++
			n.value(v.DefaultValue)
			n.directives(v.Directives)
		}
		n.directives(op.Directives)
		n.set(op.SelectionSet)
	}
	for _, f := range doc.Fragments {
		n.selections++
		n.directives(f.Directives)
		n.set(f.SelectionSet)
	}
	return int64(len(query)) + docBytes + n.selections*selectionBytes + n.values*valueBytes
}

type nodeCount struct{ selections, values int64 }

func (n *nodeCount) set(set ast.SelectionSet) {
	for _, sel := range set {
		n.selections++
		switch s := sel.(type) {
		case *ast.Field:
			for _, a := range s.Arguments {
				n.values++
				n.value(a.Value)
			}
			n.directives(s.Directives)
			n.set(s.SelectionSet)
		case *ast.InlineFragment:
			n.directives(s.Directives)
			n.set(s.SelectionSet)
		case *ast.FragmentSpread:
			n.directives(s.Directives)
		}
	}
}

func (n *nodeCount) directives(ds ast.DirectiveList) {
	for _, d := range ds {
		n.values++
		for _, a := range d.Arguments {
			n.values++
			n.value(a.Value)
		}
	}
}

func (n *nodeCount) value(v *ast.Value) {
	if v == nil {
		return
	}
	n.values++
	for _, c := range v.Children {
		n.value(c.Value)
	}
}
