package graph

import (
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
	rig := newLimitsRig(t, ServerConfig{Limits: QueryLimits{MaxDepth: 15}})
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
			a := rig.post(t, tc.query, nil)
			if tc.refused {
				a.wantRefused(t, CodeDepthLimit)
				return
			}
			a.wantNoErrors(t)
		})
	}
	t.Run("MAX_DEPTH still bounds the rest, beside introspection", func(t *testing.T) {
		// 16 levels outside introspection (refused before validation,
		// so the field names need not exist).
		a := rig.post(t, "{ __schema { types { name } } "+strings.Repeat("a { ", 15)+"b"+strings.Repeat(" }", 15)+" }", nil)
		a.wantRefused(t, CodeDepthLimit)
	})
}
