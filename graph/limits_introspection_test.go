package graph

import (
	"fmt"
	"paygraph/graph/admission"
	"paygraph/graph/errcode"
	"strings"
	"testing"
)

// introspectionAtTypeDepth is graphql-js 16's getIntrospectionQuery() shape with
// its TypeRef fragment nested typeDepth times (graphql-js's default is 9:
// exactly MAX_DEPTH 15 in all).
func introspectionAtTypeDepth(typeDepth int) string {
	typeRef := "kind name" + strings.Repeat(" ofType { kind name", typeDepth) + strings.Repeat(" }", typeDepth)
	return `query IntrospectionQuery { __schema { queryType { name } mutationType { name } subscriptionType { name }
  types { ...FullType } directives { name description locations args { ...InputValue } } } }
fragment FullType on __Type { kind name description specifiedByURL
  fields(includeDeprecated: true) { name description args { ...InputValue } type { ...TypeRef } isDeprecated deprecationReason }
  inputFields { ...InputValue } interfaces { ...TypeRef }
  enumValues(includeDeprecated: true) { name description isDeprecated deprecationReason } possibleTypes { ...TypeRef } }
fragment InputValue on __InputValue { name description type { ...TypeRef } defaultValue }
fragment TypeRef on __Type { ` + typeRef + ` }`
}

// TestIntrospectionDepth: introspection is bounded by its own depth rule,
// not MAX_DEPTH, so that a client asking a deeper typeDepth is served;
// queries outside introspection keep MAX_DEPTH, and introspection deeper
// than its own bound is still refused.
func TestIntrospectionDepth(t *testing.T) {
	t.Parallel()
	rig := NewRig(t, RigConfig{Server: ServerConfig{Limits: admission.QueryLimits{MaxDepth: 15}}})
	for _, tc := range []struct {
		name, query string
		refused     bool
	}{
		{"graphql-js default typeDepth 9", introspectionAtTypeDepth(9), false},
		{"typeDepth 20", introspectionAtTypeDepth(20), false},
		{"typeDepth 25", introspectionAtTypeDepth(25), false},
		{"__type typeDepth 20", `{ __type(name: "PaymentConnection") { fields { type { ` + strings.Repeat("ofType { ", 20) + "name" + strings.Repeat(" }", 20) + ` } } } }`, false},
		{"introspection past its own bound", introspectionAtTypeDepth(40), true},
		{"__type past its own bound", `{ __type(name: "Payment") { ` + strings.Repeat("ofType { ", 40) + "name" + strings.Repeat(" }", 40) + ` } }`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := rig.post(t, tc.query, nil)
			if tc.refused {
				a.wantRefused(t, errcode.DepthLimit)
				return
			}
			a.wantNoErrors(t)
		})
	}
	t.Run("MAX_DEPTH still bounds the rest, beside introspection", func(t *testing.T) {
		// 16 levels outside introspection (refused before validation,
		// so the field names need not exist).
		a := rig.post(t, "{ __schema { types { name } } "+strings.Repeat("a { ", 15)+"b"+strings.Repeat(" }", 15)+" }", nil)
		a.wantRefused(t, errcode.DepthLimit)
	})
}

// nestedSchemaAliases is issue 22's measured attack: n aliases of a nested
// __schema { types { ... fields { ... args ... } } } in one operation.
func nestedSchemaAliases(n int) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		fmt.Fprintf(&b, " s%d: __schema { types { name kind description fields { name description args { name description defaultValue } } } }", i)
	}
	b.WriteString(" }")
	return b.String()
}

// TestIntrospectionBound: one operation may select __schema once (aliases
// and fragment spreads count), refused before validation with
// FIELD_LIMIT_EXCEEDED; what one __schema renders counts against
// MAX_RESPONSE_BYTES like any answer.
func TestIntrospectionBound(t *testing.T) {
	t.Parallel()
	rig := NewRig(t, RigConfig{})
	for _, tc := range []struct {
		name, query string
		refused     bool
	}{
		{"one __schema is served", nestedSchemaAliases(1), false},
		{"graphql-js introspection query is served", introspectionAtTypeDepth(9), false},
		{"two __schema aliases are refused", `{ a: __schema { queryType { name } } b: __schema { queryType { name } } }`, true},
		{"two __schema through fragments are refused", `{ ...S ... on Query { __schema { queryType { name } } } } fragment S on Query { __schema { queryType { name } } }`, true},
		{"54 nested __schema aliases are refused", nestedSchemaAliases(54), true},
		{"__schema and __type together are served", `{ __schema { queryType { name } } __type(name: "Payment") { name } }`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := rig.post(t, tc.query, nil)
			if tc.refused {
				a.wantRefused(t, errcode.FieldLimit)
				if !strings.Contains(a.Errors[0].Message, "__schema") {
					t.Errorf("message %q does not name __schema", a.Errors[0].Message)
				}
				return
			}
			a.wantNoErrors(t)
		})
	}
	t.Run("refused before execution: a document with an unknown field is refused for __schema, not by validation", func(t *testing.T) {
		a := rig.post(t, `{ a: __schema { nope } b: __schema { nope } }`, nil)
		a.wantRefused(t, errcode.FieldLimit)
	})
	t.Run("a small MAX_RESPONSE_BYTES refuses one __schema", func(t *testing.T) {
		one := rig.post(t, nestedSchemaAliases(1), nil)
		one.wantNoErrors(t)
		small := NewRig(t, RigConfig{Server: ServerConfig{MaxResponseBytes: int64(len(one.Data)) / 2}})
		a := small.post(t, nestedSchemaAliases(1), nil)
		a.wantRefused(t, errcode.ResponseTooLarge)
		// Figure: what the 54-alias attack answered before (54 times one
		// __schema's data, the bound gqlgen renders) and what it answers now.
		attack := rig.post(t, nestedSchemaAliases(54), nil)
		t.Logf("54 nested __schema aliases: query %d B; before: about %d B answered (54 x %d B); now: %d B (FIELD_LIMIT_EXCEEDED)",
			len(nestedSchemaAliases(54)), 54*len(one.Data), len(one.Data), len(attack.body))
	})
}
