package admission

// The plan of an operation's distinct REST calls by route and level (1:
// asked for by arguments; 2: joins on a level-1 answer): its total is the
// estimate charged, shown in the receipt and answered by a dry run.

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/vektah/gqlparser/v2/ast"

	"paygraph/graph/relay"
	"paygraph/restclient"
)

// The route templates of a plan, as the REST API documents them.
const (
	RouteList    = "GET " + string(restclient.EndpointListPayments)
	RoutePayment = "GET " + string(restclient.EndpointGetPayment)
	RouteLink    = "GET " + string(restclient.EndpointGetPaymentLink)
	RouteSession = "GET " + string(restclient.EndpointGetCheckoutSession)
)

// PlanCall is one line of a plan: Calls calls of Route (ID when named)
// for the field at Path; UpTo: at most Calls (a join).
type PlanCall struct {
	Route string `json:"route"`
	ID    string `json:"id,omitempty"`
	Calls int    `json:"calls"`
	Path  string `json:"path"`
	UpTo  bool   `json:"upTo,omitempty"`
	k     string // the planKey's id
}

// PlanLevel is a dependency level of a plan and its calls.
type PlanLevel struct {
	Level int        `json:"level"`
	Calls []PlanCall `json:"calls"`
}

// planKey identifies a plan line: its route and id, or a list's identity.
type planKey struct{ route, id string }

// Plan is an operation's plan: its lines by level, and their total.
type Plan struct {
	levels [2][]PlanCall
	keys   map[planKey]struct{} // past smallPlan lines
	total  int
	first  [1]PlanCall // level 1's first line: most operations have one
}

// smallPlan is how many lines are deduplicated by a scan before a map.
const smallPlan = 16

func (p *Plan) add(level int, k planKey, c PlanCall) {
	if p.keys != nil {
		if _, ok := p.keys[k]; ok {
			return
		}
		p.keys[k] = struct{}{}
	} else {
		for _, l := range p.levels {
			if slices.ContainsFunc(l, func(o PlanCall) bool { return o.Route == k.route && o.k == k.id }) {
				return
			}
		}
		if n := len(p.levels[0]) + len(p.levels[1]); n >= smallPlan {
			p.keys = make(map[planKey]struct{}, 2*n)
			for _, l := range p.levels {
				for _, o := range l {
					p.keys[planKey{o.Route, o.k}] = struct{}{}
				}
			}
			p.keys[k] = struct{}{}
		}
	}
	c.Route, c.k = k.route, k.id
	if level == 1 && p.levels[0] == nil {
		p.levels[0] = p.first[:0]
	}
	p.levels[level-1] = append(p.levels[level-1], c)
	p.total += c.Calls
}

// Total is the plan's estimate: its lines' calls.
func (p *Plan) Total() int { return p.total }

// JoinCalls is the calls planned for the address join of list listID.
func (p *Plan) JoinCalls(listID string) int {
	for _, c := range p.levels[1] {
		if c.Route == RoutePayment && c.k == "details of "+listID {
			return c.Calls
		}
	}
	return 0
}

// ListID is a payments list's identity in a plan.
func ListID(first int, status, after string) string {
	return "first=" + strconv.Itoa(first) + "&status=" + status + "&after=" + after
}

// Levels are the plan's levels that have calls, in order (never nil).
func (p *Plan) Levels() []PlanLevel {
	out := []PlanLevel{}
	for i, l := range p.levels {
		if len(l) > 0 {
			out = append(out, PlanLevel{Level: i + 1, Calls: l})
		}
	}
	return out
}

// planOperation plans op for caller c, whose scope drops what it refuses
// without a REST call and adds the session a token learns.
func planOperation(doc *ast.QueryDocument, op *ast.OperationDefinition, vars map[string]any, c Caller) *Plan {
	p := &Plan{}
	if op == nil || op.Operation != ast.Query {
		return p
	}
	w := planWalk{estimate: estimate{doc: doc, vars: vars, noAddress: c.NoAddress, directives: true}, plan: p}
	if s, ok := c.Scope, c.HasScope; ok {
		w.scope = s
		if ref, ok := s.SessionToLearn(); ok {
			p.add(1, planKey{RouteSession, ref}, PlanCall{ID: ref, Calls: 1, Path: "(the session token's checkout session)"})
		}
	}
	w.eachField(op.SelectionSet, func(f *ast.Field) { w.root(f) })
	return p
}

type planWalk struct {
	estimate
	plan  *Plan
	scope Scope
}

func (w *planWalk) root(f *ast.Field) {
	if f.ObjectDefinition == nil || f.ObjectDefinition.Name != "Query" {
		return
	}
	path := cmp.Or(f.Alias, f.Name)
	switch f.Name {
	case "payments":
		args := f.ArgumentMap(w.vars)
		if w.scope != nil && !w.scope.AllowsList() {
			return // FORBIDDEN before any call
		}
		n := firstOf(args)
		after, _ := args["after"].(string)
		status, _ := args["status"].(string)
		id := ListID(n, status, after)
		w.plan.add(1, planKey{RouteList, id}, PlanCall{Calls: listPages(n, args["after"] != nil, after), Path: path})
		if !w.noAddress && w.selects(f.SelectionSet, "Customer", "address") && n > 0 {
			w.plan.add(2, planKey{RoutePayment, "details of " + id}, PlanCall{Calls: n, Path: path + ".…customer.address", UpTo: true})
		}
	case "payment", "paymentLink":
		if id := w.stringArg(f, "id"); hasIDPrefix(id, idPrefix[f.Name]) {
			w.node(id, path)
		}
	case "node":
		w.node(w.stringArg(f, "id"), path)
	case "nodes":
		ids, _ := f.ArgumentMap(w.vars)["ids"].([]any)
		if len(ids) > MaxNodes {
			return // BAD_USER_INPUT before any call
		}
		for i, id := range ids {
			s, _ := id.(string)
			w.node(s, path+"["+strconv.Itoa(i)+"]")
		}
	case "checkoutSession":
		w.session(f, w.stringArg(f, "id"), path)
	case "_entities":
		reps, _ := f.ArgumentMap(w.vars)["representations"].([]any)
		if len(reps) > MaxNodes {
			return // COMPLEXITY_LIMIT_EXCEEDED before any call
		}
		for i, r := range reps {
			rep, _ := r.(map[string]any)
			id, _ := rep["id"].(string)
			at := path + "[" + strconv.Itoa(i) + "]"
			switch t, _ := rep["__typename"].(string); t {
			case "Payment", "PaymentLink":
				if hasIDPrefix(id, idPrefix[t]) {
					w.node(id, at)
				}
			case "CheckoutSession":
				key, _ := rep["sessionId"].(string)
				if _, ok := rep["sessionId"]; !ok {
					key, _ = rep["reference"].(string)
				}
				w.session(f, key, at)
			}
		}
	}
}

// session plans the checkout session id (or reference) at path, and its payment if f selects it.
func (w *planWalk) session(f *ast.Field, id, path string) {
	if !ValidID(id) {
		return
	}
	w.plan.add(1, planKey{RouteSession, id}, PlanCall{ID: id, Calls: 1, Path: path})
	if w.selects(f.SelectionSet, "CheckoutSession", "payment") {
		w.plan.add(2, planKey{RoutePayment, "payment of session " + id}, PlanCall{Calls: 1, Path: path + ".payment", UpTo: true})
	}
}

// stringArg is f's string argument name ("" when none), without a map.
func (w *planWalk) stringArg(f *ast.Field, name string) string {
	a := f.Arguments.ForName(name)
	if a == nil || a.Value == nil {
		return ""
	}
	switch a.Value.Kind {
	case ast.StringValue, ast.BlockValue:
		return a.Value.Raw
	case ast.Variable:
		s, _ := w.vars[a.Value.Raw].(string)
		return s
	}
	return ""
}

// node plans the id of node(id:) and the like by its prefix; any other id
// is refused before a call, and so is a link the scope does not allow.
func (w *planWalk) node(id, path string) {
	switch {
	case hasIDPrefix(id, PaymentIDPrefix):
		w.plan.add(1, planKey{RoutePayment, id}, PlanCall{ID: id, Calls: 1, Path: path})
	case hasIDPrefix(id, LinkIDPrefix) && (w.scope == nil || w.scope.AllowsPaymentLink(id)):
		w.plan.add(1, planKey{RouteLink, id}, PlanCall{ID: id, Calls: 1, Path: path})
	}
}

// listPages is the REST pages a connection of first n reads: after a
// cursor (its tag unchecked: relay.PeekSkip), two when past its page.
func listPages(n int, hasAfter bool, after string) int {
	if !hasAfter {
		return 1
	}
	if skip, ok := relay.PeekSkip(after); ok && skip+max(n, 1) <= RESTMaxLimit {
		return 1
	}
	return 2
}

// Included reports whether @skip and @include, with vars, keep a selection.
func Included(ds ast.DirectiveList, vars map[string]any) bool {
	for _, d := range ds {
		if d.Name != "skip" && d.Name != "include" {
			continue
		}
		if a := d.Arguments.ForName("if"); a != nil && a.Value != nil {
			v, err := a.Value.Value(vars)
			if b, ok := v.(bool); err == nil && ok && b == (d.Name == "skip") {
				return false
			}
		}
	}
	return true
}

// The REST ids' documented shapes (pay_prod_<hex>, pl_<alnum>, short
// references): any other id is refused before a call.
const (
	maxIDLen        = 128
	PaymentIDPrefix = "pay_"
	LinkIDPrefix    = "pl_"
)

// ValidID reports whether id could be a REST id.
func ValidID(id string) bool {
	if len(id) == 0 || len(id) > maxIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if !idByte[id[i]] {
			return false
		}
	}
	return true
}

// idByte tells the bytes an id may hold: letters, digits, '_' and '-'.
var idByte = func() (t [256]bool) {
	for c := range 256 {
		t[c] = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-'
	}
	return t
}()

// idPrefix is the id prefix of a root field's or entity type's ids.
var idPrefix = map[string]string{"payment": PaymentIDPrefix, "Payment": PaymentIDPrefix, "paymentLink": LinkIDPrefix, "PaymentLink": LinkIDPrefix}

// hasIDPrefix reports whether id is a valid id of prefix and more.
func hasIDPrefix(id, prefix string) bool {
	return ValidID(id) && len(id) > len(prefix) && strings.HasPrefix(id, prefix)
}
