package graph

// CreateOperationContext is gqlgen's executor.CreateOperationContext
// (v0.17.98, mirroredGqlgen) step for step, the same extensions called in
// the same order with the same arguments, but for one step: the coercion
// of the variables. gqlparser's validator.VariableValues walks each value
// by reflection and boxes it again (issue 25: a fifth of
// CreateOperationContext for a single payment by variable); an operation
// whose variables are all plain String or ID scalars (no list, no default)
// given as JSON strings is coerced here to the same map, and any other
// operation or value (absent, null, a number, a list, an input object) is
// gqlparser's, errors and all (TestCreateOperationContextMatchesGqlgen,
// TestPlainVariablesMatchGqlparser).
//
// The executor's extensions are read from it (its unexported fields, by
// reflection, once per executor), so that the mirror calls exactly the
// operation-parameter and operation-context mutators gqlgen would (graph's,
// the edge's rate-limit charge, any ServerConfig.Extensions) and hands the
// operation the same field middlewares. Anything it cannot read, another
// gqlgen or gqlparser version in the build, or an executor that is not
// gqlgen's, and gqlgen's own CreateOperationContext runs instead.

import (
	"context"
	"reflect"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/99designs/gqlgen/graphql/executor"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/parser"
	"github.com/vektah/gqlparser/v2/validator"
	"github.com/vektah/gqlparser/v2/validator/rules"
)

// The library versions the mirror was verified against (graph/gen's
// verifiedGqlgen says the same of gqlgen; TestMirrorVersionsAgree).
const (
	mirroredGqlgen    = "v0.17.98"
	mirroredGqlparser = "v2.5.64"
)

// mirrorOff turns the mirror off (SetOperationMirror).
var mirrorOff atomic.Bool

// SetOperationMirror turns the mirror of CreateOperationContext on or off
// for the process (on by default): off, every operation context is
// gqlgen's. The differential tests compare the two.
func SetOperationMirror(on bool) { mirrorOff.Store(!on) }

// CreateOperationContext is exec.CreateOperationContext(ctx, params), as
// gqlgen's executor makes it, with the plain variables coerced without
// reflection (above). The edge's transports call it.
func CreateOperationContext(ctx context.Context, exec graphql.GraphExecutor, params *graphql.RawParams) (*graphql.OperationContext, gqlerror.List) {
	if m := mirrorOf(exec); m != nil {
		return m.create(ctx, params)
	}
	return exec.CreateOperationContext(ctx, params)
}

// execMirror is what CreateOperationContext reads of an executor.
type execMirror struct {
	exec *executor.Executor
	// exts is the executor's list of extensions, and n its length when it
	// was read: an extension added later (Use) is seen, and the executor
	// read again.
	exts *[]graphql.HandlerExtension
	n    int

	es                graphql.ExecutableSchema
	recoverFunc       graphql.RecoverFunc
	queryCache        graphql.Cache[*ast.QueryDocument]
	parserTokenLimit  int
	disableSuggestion bool
	defaultRulesFn    func() *rules.Rules
	fieldMiddleware   graphql.FieldMiddleware
	rootMiddleware    graphql.RootFieldMiddleware
	paramMutators     []graphql.OperationParameterMutator
	contextMutators   []graphql.OperationContextMutator
}

// lastMirror is the mirror of the executor last asked for (a process
// serves one).
var lastMirror atomic.Pointer[execMirror]

// versionsVerified reports whether the build's gqlgen and gqlparser are
// the versions the mirror was verified against. A binary without module
// information (a test binary has none) is checked by
// TestMirrorVersionsAgree instead, against go.mod.
var versionsVerified = sync.OnceValue(func() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok || len(bi.Deps) == 0 {
		return true
	}
	return moduleVersion(bi, "github.com/99designs/gqlgen") == mirroredGqlgen &&
		moduleVersion(bi, "github.com/vektah/gqlparser/v2") == mirroredGqlparser
})

// moduleVersion is the version of module path in bi ("" when it is not
// there, or replaced).
func moduleVersion(bi *debug.BuildInfo, path string) string {
	for _, m := range bi.Deps {
		if m.Path == path {
			if m.Replace != nil {
				return ""
			}
			return m.Version
		}
	}
	return ""
}

// mirrorOf is exec's mirror, or nil when gqlgen's must run.
func mirrorOf(exec graphql.GraphExecutor) *execMirror {
	if mirrorOff.Load() {
		return nil
	}
	e, ok := exec.(*executor.Executor)
	if !ok || e == nil {
		return nil
	}
	if m := lastMirror.Load(); m != nil && m.exec == e {
		if len(*m.exts) == m.n {
			return m
		}
	}
	if !versionsVerified() {
		return nil
	}
	m := readExecutor(e)
	if m == nil {
		return nil
	}
	lastMirror.Store(m)
	return m
}

// readExecutor reads e's fields (executor.Executor, v0.17.98), or
// returns nil when one is missing or of another type.
func readExecutor(e *executor.Executor) *execMirror {
	v := reflect.ValueOf(e).Elem()
	ext := v.FieldByName("ext")
	if !ext.IsValid() || ext.Kind() != reflect.Struct {
		return nil
	}
	m := &execMirror{exec: e}
	ok := readField(v, "extensions", &m.exts) &&
		readValue(v, "es", &m.es) &&
		readValue(v, "recoverFunc", &m.recoverFunc) &&
		readValue(v, "queryCache", &m.queryCache) &&
		readValue(v, "parserTokenLimit", &m.parserTokenLimit) &&
		readValue(v, "disableSuggestion", &m.disableSuggestion) &&
		readValue(v, "defaultRulesFn", &m.defaultRulesFn) &&
		readValue(ext, "fieldMiddleware", &m.fieldMiddleware) &&
		readValue(ext, "rootFieldMiddleware", &m.rootMiddleware) &&
		readValue(ext, "operationParameterMutators", &m.paramMutators) &&
		readValue(ext, "operationContextMutators", &m.contextMutators)
	if !ok || m.es == nil || m.recoverFunc == nil || m.queryCache == nil || m.fieldMiddleware == nil || m.rootMiddleware == nil {
		return nil
	}
	m.n = len(*m.exts)
	return m
}

// readField points *into at struct v's field name, when it is of *into's
// pointed-to type.
func readField[T any](v reflect.Value, name string, into **T) bool {
	f := v.FieldByName(name)
	if !f.IsValid() || f.Type() != reflect.TypeFor[T]() || !f.CanAddr() {
		return false
	}
	*into = (*T)(unsafe.Pointer(f.UnsafeAddr()))
	return true
}

// readValue copies struct v's field name into *into, when it is of its type.
func readValue[T any](v reflect.Value, name string, into *T) bool {
	var p *T
	if !readField(v, name, &p) {
		return false
	}
	*into = *p
	return true
}

// create is executor.CreateOperationContext (v0.17.98).
func (m *execMirror) create(ctx context.Context, params *graphql.RawParams) (*graphql.OperationContext, gqlerror.List) {
	opCtx := &graphql.OperationContext{
		DisableIntrospection:   true,
		RecoverFunc:            m.recoverFunc,
		ResolverMiddleware:     m.fieldMiddleware,
		RootResolverMiddleware: m.rootMiddleware,
		Stats: graphql.Stats{
			Read:           params.ReadTime,
			OperationStart: graphql.GetStartTime(ctx),
		},
	}
	ctx = graphql.WithOperationContext(ctx, opCtx)

	for _, p := range m.paramMutators {
		if err := p.MutateOperationParameters(ctx, params); err != nil {
			return opCtx, gqlerror.List{err}
		}
	}

	opCtx.RawQuery = params.Query
	opCtx.OperationName = params.OperationName
	opCtx.Extensions = params.Extensions
	opCtx.Headers = params.Headers

	var listErr gqlerror.List
	opCtx.Doc, listErr = m.parseQuery(ctx, &opCtx.Stats, params.Query)
	if len(listErr) != 0 {
		return opCtx, listErr
	}

	opCtx.Operation = opCtx.Doc.Operations.ForName(params.OperationName)
	if opCtx.Operation == nil {
		err := gqlerror.Errorf("operation %s not found", params.OperationName)
		errcode.Set(err, errcode.ValidationFailed)
		return opCtx, gqlerror.List{err}
	}

	var err error
	if vars, ok := plainVariables(opCtx.Operation, params.Variables); ok {
		opCtx.Variables = vars
	} else {
		opCtx.Variables, err = validator.VariableValues(m.es.Schema(), opCtx.Operation, params.Variables)
	}
	if err != nil {
		gqlErr, ok := err.(*gqlerror.Error)
		if ok {
			errcode.Set(gqlErr, errcode.ValidationFailed)
			return opCtx, gqlerror.List{gqlErr}
		}
	}
	opCtx.Stats.Validation.End = graphql.Now()

	for _, p := range m.contextMutators {
		if err := p.MutateOperationContext(ctx, opCtx); err != nil {
			return opCtx, gqlerror.List{err}
		}
	}

	return opCtx, nil
}

// parseQuery is executor.parseQuery (v0.17.98).
func (m *execMirror) parseQuery(ctx context.Context, stats *graphql.Stats, query string) (*ast.QueryDocument, gqlerror.List) {
	stats.Parsing.Start = graphql.Now()

	if doc, ok := m.queryCache.Get(ctx, query); ok {
		now := graphql.Now()

		stats.Parsing.End = now
		stats.Validation.Start = now
		return doc, nil
	}

	doc, err := parser.ParseQueryWithTokenLimit(&ast.Source{Input: query}, m.parserTokenLimit)
	if err != nil {
		gqlErr, ok := err.(*gqlerror.Error)
		if ok {
			errcode.Set(gqlErr, errcode.ParseFailed)
			return nil, gqlerror.List{gqlErr}
		}
	}
	stats.Parsing.End = graphql.Now()

	stats.Validation.Start = graphql.Now()

	if doc == nil || len(doc.Operations) == 0 {
		err = gqlerror.Errorf("no operation provided")
		gqlErr, _ := err.(*gqlerror.Error)
		errcode.Set(err, errcode.ValidationFailed)
		return nil, gqlerror.List{gqlErr}
	}

	var currentRules *rules.Rules
	if m.defaultRulesFn == nil {
		currentRules = rules.NewDefaultRules()
	} else {
		currentRules = m.defaultRulesFn()
	}

	if m.disableSuggestion {
		currentRules.RemoveRule("FieldsOnCorrectType")
		fieldsOnCorrectTypeRule := rules.FieldsOnCorrectTypeRuleWithoutSuggestions
		currentRules.AddRule(fieldsOnCorrectTypeRule.Name, fieldsOnCorrectTypeRule.RuleFunc)

		currentRules.RemoveRule("ScalarLeafs")
		scalarLeafsRule := rules.ScalarLeafsRuleWithoutSuggestions
		currentRules.AddRule(scalarLeafsRule.Name, scalarLeafsRule.RuleFunc)
	} else {
		currentRules.RemoveRule("FieldsOnCorrectTypeWithoutSuggestions")
		fieldsOnCorrectTypeRule := rules.FieldsOnCorrectTypeRule
		currentRules.AddRule(fieldsOnCorrectTypeRule.Name, fieldsOnCorrectTypeRule.RuleFunc)

		currentRules.RemoveRule("ScalarLeafsWithoutSuggestions")
		scalarLeafsRule := rules.ScalarLeafsRule
		currentRules.AddRule(scalarLeafsRule.Name, scalarLeafsRule.RuleFunc)
	}

	listErr := validator.ValidateWithRules(m.es.Schema(), doc, currentRules)
	if len(listErr) != 0 {
		for _, e := range listErr {
			errcode.Set(e, errcode.ValidationFailed)
		}
		return nil, listErr
	}

	m.queryCache.Add(ctx, query, doc)

	return doc, nil
}

// plainVariables is what validator.VariableValues (gqlparser v2.5.64)
// answers for an operation whose every variable is a String or an ID
// (nullable or not, no list, no default value) given as a JSON string:
// each value as it was sent. ok is false for anything else (a variable of
// another type, or with a default; a value absent, null or not a string),
// which gqlparser coerces, or refuses with its error. When vars holds
// nothing but the operation's variables, it is the answer itself (the
// request's own map, which nothing writes: a map and its first group
// fewer); else a map of the declared ones.
func plainVariables(op *ast.OperationDefinition, vars map[string]any) (map[string]any, bool) {
	for _, d := range op.VariableDefinitions {
		t := d.Type
		if t == nil || t.Elem != nil || t.NamedType != "ID" && t.NamedType != "String" ||
			d.DefaultValue != nil || d.Definition == nil || d.Definition.Kind != ast.Scalar {
			return nil, false
		}
		if _, ok := vars[d.Variable].(string); !ok {
			return nil, false
		}
	}
	if vars != nil && len(vars) == len(op.VariableDefinitions) {
		return vars, true // every key is a declared variable's (above)
	}
	coerced := make(map[string]any, len(op.VariableDefinitions))
	for _, d := range op.VariableDefinitions {
		coerced[d.Variable] = vars[d.Variable]
	}
	return coerced, true
}
