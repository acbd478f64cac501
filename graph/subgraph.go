package graph

import (
	"sync"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
)

// contractSchema is the schema served with the subgraph mode off:
// schema.graphqls without gqlgen's federation additions.
var contractSchema = sync.OnceValue(func() *ast.Schema {
	for _, src := range sources {
		if src.Name == "../schema.graphqls" { // as gqlgen names it
			return gqlparser.MustLoadSchema(src)
		}
	}
	panic("graph: the generated executor has no source ../schema.graphqls")
})

// executorConfig is the generated executor's configuration.
func executorConfig(root ResolverRoot, federation bool) Config {
	c := Config{Resolvers: root}
	if !federation {
		c.Schema = contractSchema()
	}
	return c
}
