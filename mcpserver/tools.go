package mcpserver

import (
	"cmp"
	"log/slog"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"

	"paygraph/trusteddocs"
)

// tool is one tool and the operation it runs.
type tool struct {
	tool       *mcp.Tool
	query      string // the document's text
	operation  string // its operation name: the tool's name
	documentID string // the manifest's id; "" for a built-in
	arbitrary  bool   // the graphql tool: the arguments are the request
}

// arbitraryTool runs any query the caller sends, as /graphql would.
var arbitraryTool = tool{arbitrary: true, tool: &mcp.Tool{
	Name:        "graphql",
	Description: "Runs a GraphQL query of the paygraph schema (go run . -print-schema) with its variables; the answer is its data.",
	InputSchema: map[string]any{"type": "object", "required": []string{"query"}, "additionalProperties": false, "properties": map[string]any{
		"query":         map[string]any{"type": "string"},
		"variables":     map[string]any{"type": "object"},
		"operationName": map[string]any{"type": "string"},
	}},
	Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, Title: "graphql"},
}}

type toolSet struct {
	digest string // of the manifest the tools were read from
	tools  []tool
	server *mcp.Server // serving them
}

// The built-ins' selections: the fields of each read path.
const (
	paymentFields = `id status amount { amount currency } transactionId paymentMethod
  customer { name email phone address city } createdAt updatedAt`
	moneyFields = `{ amount currency }`
)

// builtIns are the four read paths as named queries.
var builtIns = []trusteddocs.Document{
	{Body: `query getPayment($id: ID!) { payment(id: $id) { ` + paymentFields + ` } }`},
	{Body: `query listPayments($status: PaymentStatus, $first: Int = 20, $after: String) {
  payments(status: $status, first: $first, after: $after) {
    nodes { ` + paymentFields + ` } pageInfo { hasNextPage endCursor } } }`},
	{Body: `query getPaymentLink($id: ID!) { paymentLink(id: $id) { id url slug title description amount ` + moneyFields + `
  isReusable isActive currentUses maxUses expiresAt createdAt updatedAt } }`},
	{Body: `query getCheckoutSession($id: String!) { checkoutSession(id: $id) { sessionId reference paymentId status paymentStatus
  amount ` + moneyFields + ` subtotal ` + moneyFields + ` customer { name email phone address city }
  transactionId paymentMethod metadata { key value } createdAt updatedAt } }`},
}

// builtInDescriptions describe the built-ins, by name.
var builtInDescriptions = map[string]string{
	"getPayment":         "One payment by id.",
	"listPayments":       "The business's payments, in the REST API's order, optionally of one status. first: 0..100; after: pageInfo.endCursor of the previous page.",
	"getPaymentLink":     "One payment link by id.",
	"getCheckoutSession": "One checkout session by its session id or payment reference.",
}

// buildTools makes a tool of every named query of the manifest, then of
// the built-ins (when offered) whose names the manifest does not take.
func buildTools(schema *ast.Schema, digest string, docs []trusteddocs.Document, withBuiltIns, arbitrary bool, logger *slog.Logger) *toolSet {
	set := &toolSet{digest: digest}
	seen := map[string]bool{}
	if arbitrary {
		set.tools, seen[arbitraryTool.tool.Name] = append(set.tools, arbitraryTool), true
	}
	if withBuiltIns {
		docs = append(docs, builtIns...)
	}
	for _, d := range docs {
		doc, errs := gqlparser.LoadQueryWithRules(schema, d.Body, nil)
		if len(errs) > 0 {
			if logger != nil {
				logger.Warn("mcp: a trusted document is not a tool", "id", d.ID, "error", errs.Error())
			}
			continue
		}
		for _, op := range doc.Operations {
			if op.Operation != ast.Query || op.Name == "" || seen[op.Name] {
				continue
			}
			seen[op.Name] = true
			// OutputSchema: the answer is the operation's data.
			t := &mcp.Tool{Name: op.Name, Description: describe(op, d.ID), InputSchema: inputSchema(schema, op.VariableDefinitions),
				OutputSchema: selectionSchema(schema, op.SelectionSet, ""),
				Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true, Title: op.Name}}
			set.tools = append(set.tools, tool{tool: t, query: d.Body, operation: op.Name, documentID: d.ID})
		}
	}
	return set
}

// describe is the operation's description or comment, else what it runs.
func describe(op *ast.OperationDefinition, id string) string {
	if id == "" {
		return builtInDescriptions[op.Name]
	}
	if op.Comment != nil {
		if c := strings.TrimSpace(op.Comment.Dump()); c != "" {
			return c
		}
	}
	return "Runs the trusted GraphQL query " + op.Name + " (document " + id + ")."
}

// inputSchema is the JSON schema of an operation's variables.
func inputSchema(schema *ast.Schema, vars ast.VariableDefinitionList) map[string]any {
	props, required := map[string]any{}, []string{}
	for _, v := range vars {
		s := typeSchema(schema, v.Type, 0)
		if v.Description != "" {
			s["description"] = v.Description
		}
		props[v.Variable] = s
		if v.Type.NonNull && v.DefaultValue == nil {
			required = append(required, v.Variable)
		}
	}
	return map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false}
}

// maxInputDepth bounds the schema of a recursive input type.
const maxInputDepth = 5

// selectionSchema is the JSON schema of the data a selection of type
// typename answers; a field of a fragment on another type is optional.
func selectionSchema(schema *ast.Schema, set ast.SelectionSet, typename string) map[string]any {
	props, required := map[string]any{}, []string{}
	var add func(set ast.SelectionSet, inFragment bool)
	add = func(set ast.SelectionSet, inFragment bool) {
		for _, sel := range set {
			switch sel := sel.(type) {
			case *ast.Field:
				name := cmp.Or(sel.Alias, sel.Name)
				if sel.Definition == nil {
					props[name] = map[string]any{}
				} else {
					props[name] = outputSchema(schema, sel.Definition.Type, sel.SelectionSet)
				}
				if !inFragment && !slices.Contains(required, name) {
					required = append(required, name)
				}
			case *ast.InlineFragment:
				add(sel.SelectionSet, inFragment || (sel.TypeCondition != "" && sel.TypeCondition != typename))
			case *ast.FragmentSpread:
				if sel.Definition != nil {
					add(sel.Definition.SelectionSet, inFragment || sel.Definition.TypeCondition != typename)
				}
			}
		}
	}
	add(set, false)
	return map[string]any{"type": "object", "properties": props, "required": required}
}

// outputSchema is the JSON schema of a field of type t answering set, null where GraphQL allows.
func outputSchema(schema *ast.Schema, t *ast.Type, set ast.SelectionSet) map[string]any {
	var s map[string]any
	switch def := schema.Types[t.NamedType]; {
	case t.Elem != nil:
		s = map[string]any{"type": "array", "items": outputSchema(schema, t.Elem, set)}
	case def != nil && (def.Kind == ast.Object || def.Kind == ast.Interface || def.Kind == ast.Union):
		s = selectionSchema(schema, set, def.Name)
	default:
		s = typeSchema(schema, t, 0)
	}
	if !t.NonNull {
		if typ, ok := s["type"].(string); ok {
			s["type"] = []string{typ, "null"}
		}
		if e, ok := s["enum"].([]any); ok {
			s["enum"] = append(e, nil)
		}
	}
	return s
}

// typeSchema is an input type's JSON schema; exact scalars (Decimal, ID, DateTime) are strings.
func typeSchema(schema *ast.Schema, t *ast.Type, depth int) map[string]any {
	if t.Elem != nil {
		return map[string]any{"type": "array", "items": typeSchema(schema, t.Elem, depth)}
	}
	def := schema.Types[t.NamedType]
	if def == nil {
		return map[string]any{}
	}
	switch def.Kind {
	case ast.Enum:
		vals := make([]any, 0, len(def.EnumValues)+1)
		for _, v := range def.EnumValues {
			vals = append(vals, v.Name)
		}
		return map[string]any{"type": "string", "enum": vals}
	case ast.InputObject:
		if depth >= maxInputDepth {
			return map[string]any{"type": "object"}
		}
		props, required := map[string]any{}, []string{}
		for _, f := range def.Fields {
			props[f.Name] = typeSchema(schema, f.Type, depth+1)
			if f.Type.NonNull && f.DefaultValue == nil {
				required = append(required, f.Name)
			}
		}
		return map[string]any{"type": "object", "properties": props, "required": required}
	}
	return map[string]any{"type": cmp.Or(jsonScalars[t.NamedType], "string")}
}

// jsonScalars are the JSON types of the scalars that are not strings.
var jsonScalars = map[string]string{"Int": "integer", "SafeInt": "integer", "Float": "number", "Boolean": "boolean"}
