// Package receipt accounts for an operation's REST calls against its plan:
// the cost receipt on every query's answer (extensions.cost, on @defer's
// final part) and a dry run's answer (extensions.plan instead of data).
// The account lives in the operation's loaders, whose REST calls the REST
// client counts in its CallLog.
package receipt

import (
	"context"
	"encoding/json"
	"slices"
	"sync"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"paygraph/graph/admission"
	"paygraph/restclient"
)

// The response extensions of the receipt and of a dry run's plan.
const (
	CostExtension = "cost"
	PlanExtension = "plan"
)

// CostReceipts configures the receipts (ServerConfig.Cost).
type CostReceipts struct {
	Enabled   bool                                  // extensions.cost on every answer (COST_RECEIPTS)
	Inspector bool                                  // each REST call in the receipt (REST_INSPECTOR)
	OnReceipt func(ctx context.Context, r *Receipt) // when set, told every query's receipt (metrics)
}

// Receipt is extensions.cost.
type Receipt struct {
	Estimated int           `json:"estimated"`
	Made      int           `json:"made"`
	Retries   int           `json:"retries"`
	Saved     int           `json:"saved"`
	Unmade    *Unmade       `json:"unmade,omitempty"`
	Budget    *BudgetLeft   `json:"budget,omitempty"`
	Calls     []InspectCall `json:"calls,omitempty"`
}

// Unmade is the part of an estimate that did not happen, by cause.
type Unmade struct {
	Deduplicated int `json:"deduplicated"`
	ShortPages   int `json:"shortPages"`
	Shared       int `json:"shared"` // answered by another operation's same call in flight
	NotReached   int `json:"notReached"`
}

// BudgetLeft is what is left of the merchant's REST-call budget.
type BudgetLeft struct {
	Remaining    int `json:"remaining"`
	Limit        int `json:"limit"`
	ResetSeconds int `json:"resetSeconds"`
}

// InspectCall is one REST call as the inspector shows it: never the base
// URL, a query string or a credential.
type InspectCall struct {
	Route        string  `json:"route"`
	ID           string  `json:"id,omitempty"`
	Status       int     `json:"status"`
	DurationMs   float64 `json:"durationMs"`
	Bytes        int64   `json:"bytes"`
	Retries      int     `json:"retries"`
	Deduplicated int     `json:"deduplicated"`
}

// Plan is a dry run's extensions.plan.
type Plan struct {
	Estimated     int                   `json:"estimated"`
	Levels        []admission.PlanLevel `json:"levels"`
	Complexity    int                   `json:"complexity"`    // the MAX_COMPLEXITY figure
	MaxComplexity int                   `json:"maxComplexity"` // its limit
	Admitted      bool                  `json:"admitted"`
	Budget        *BudgetLeft           `json:"budget,omitempty"`
}

// NoteDryRunBudget records on a dry run's plan the budget left (when ok)
// and whether the budget refused the estimate. A nil t does nothing.
func (t *Tally) NoteDryRunBudget(op *graphql.OperationContext, left BudgetLeft, ok, refused bool) {
	a, found := t.accountFor(op)
	if !found || a.peek == nil {
		return
	}
	if ok {
		a.peek.Budget = &left
	}
	if refused {
		a.peek.Admitted = false
	}
}

// identKey names the REST record an ask is for: route and id (or a list's parameters).
type identKey struct{ route, id string }

// Origin names the part of the plan an ask comes from: a plan line's
// identity (Line), or the listed payment whose address join asks (Item).
type Origin struct {
	Line string
	Item *restclient.Payment
}

type askKey struct {
	identKey
	Origin
}

// account is what admission decided for one operation: whether to keep
// an account, its plan, and a dry run's answer.
type account struct {
	on, dryRun, inspector bool
	plan                  *admission.Plan
	peek                  *Plan
	left                  BudgetLeft // what the edge's charge left (NoteLeft)
	leftOK                bool
}

// Tally is the account of the operation of one Loaders.
type Tally struct {
	calls restclient.CallLog

	mu     sync.Mutex
	acct   account
	acctOp *graphql.OperationContext // acct's operation
	// asks counts the distinct (record, Origin) pairs: a scan while few, a map
	// past smallAsks.
	asks      []askCount
	asksBuf   [2]askCount // asks' first: an operation usually asks for one or two
	askMap    map[askKey]int
	perRecord map[identKey]int    // askTotals', for the inspector
	short     int                 // pages and joins short pages did not need
	shortSeen map[string]struct{} // lists counted in short
}

// CallLog is where the REST client counts the operation's calls.
func (t *Tally) CallLog() *restclient.CallLog { return &t.calls }

// NoteLeft records, for the receipt, what op's charge left of the merchant's budget.
func (t *Tally) NoteLeft(op *graphql.OperationContext, left BudgetLeft) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.acctOp == op {
		t.acct.left, t.acct.leftOK = left, true
	}
}

// accountFor is op's account, if t has it (a nil t has none).
func (t *Tally) accountFor(op *graphql.OperationContext) (account, bool) {
	if t == nil || op == nil {
		return account{}, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.acct, t.acctOp == op
}

type askCount struct {
	askKey
	n int
}

// smallAsks is how many distinct asks are scanned before a map.
const smallAsks = 32

// Ask records an ask for the record id of route, from o.
func (t *Tally) Ask(route, id string, o Origin) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.acct.on {
		return
	}
	k := askKey{identKey{route, id}, o}
	if t.askMap != nil {
		t.askMap[k]++
		return
	}
	for i := range t.asks {
		if t.asks[i].askKey == k {
			t.asks[i].n++
			return
		}
	}
	if len(t.asks) < smallAsks {
		if t.asks == nil {
			t.asks = t.asksBuf[:0]
		}
		t.asks = append(t.asks, askCount{k, 1})
		return
	}
	t.askMap = make(map[askKey]int, 2*smallAsks)
	for _, a := range t.asks {
		t.askMap[a.askKey] = a.n
	}
	t.askMap[k] = 1
	t.asks = nil
}

// askTotals are the asks, distinct records and distinct pairs; with
// perRecord, it fills t.perRecord for the inspector. t.mu is held.
func (t *Tally) askTotals(perRecord bool) (asks, records, pairs int) {
	pairs = len(t.asks) + len(t.askMap)
	if t.askMap == nil && !perRecord {
		// Few: distinct records by a scan, without a map.
		for i, a := range t.asks {
			asks += a.n
			if !slices.ContainsFunc(t.asks[:i], func(b askCount) bool { return b.identKey == a.identKey }) {
				records++
			}
		}
		return asks, records, pairs
	}
	t.perRecord = make(map[identKey]int, pairs)
	for _, a := range t.asks {
		t.perRecord[a.identKey] += a.n
		asks += a.n
	}
	for k, n := range t.askMap {
		t.perRecord[k.identKey] += n
		asks += n
	}
	return asks, len(t.perRecord), pairs
}

// Recording reports whether asks are recorded (a receipt will be made).
func (t *Tally) Recording() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.acct.on
}

// ShortList records the pages and joins a list shorter than its plan did not need.
func (t *Tally) ShortList(id string, pagesPlanned, pagesRead, items int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.acct.on || t.acct.plan == nil {
		return
	}
	if _, ok := t.shortSeen[id]; ok {
		return
	}
	if t.shortSeen == nil {
		t.shortSeen = make(map[string]struct{})
	}
	t.shortSeen[id] = struct{}{}
	t.short += max(0, pagesPlanned-pagesRead) + max(0, t.acct.plan.JoinCalls(id)-items)
}

// receipt makes the receipt of the operation of account a.
func (t *Tally) receipt(a account) *Receipt {
	made, retries := t.calls.Counts()
	t.mu.Lock()
	r := &Receipt{Made: made, Retries: retries}
	if t.acct.plan != nil {
		r.Estimated = t.acct.plan.Total()
	}
	asks, records, pairs := t.askTotals(a.inspector)
	r.Saved = asks - records
	if r.Estimated != r.Made {
		u := &Unmade{Deduplicated: pairs - records, ShortPages: t.short, Shared: t.calls.Shared()}
		u.NotReached = r.Estimated - r.Made - u.Deduplicated - u.ShortPages - u.Shared
		r.Unmade = u
	}
	perRecord := t.perRecord
	t.mu.Unlock()
	if a.leftOK {
		left := a.left
		r.Budget = &left
	}
	if a.inspector {
		for _, c := range t.calls.Records() {
			ic := InspectCall{Route: "GET " + string(c.Endpoint), ID: c.ID, Status: c.Status, Bytes: c.Bytes, Retries: c.Retries,
				DurationMs: float64(c.Duration.Microseconds()) / 1000}
			if c.ID != "" { // perRecord is not written once made
				ic.Deduplicated = max(0, perRecord[identKey{ic.Route, c.ID}]-1)
			}
			r.Calls = append(r.Calls, ic)
		}
	}
	return r
}

// Extension puts the receipt on answers and answers dry runs; Tally is
// the tally of ctx's operation (nil: none).
type Extension struct {
	Config CostReceipts
	Tally  func(ctx context.Context) *Tally
}

var _ graphql.ResponseInterceptor = Extension{}

func (Extension) ExtensionName() string                   { return "CostReceipts" }
func (Extension) Validate(graphql.ExecutableSchema) error { return nil }

// InterceptResponse adds the receipt to a query's last result, a dry run's plan to its answer.
func (c Extension) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	return c.Finish(ctx, next(ctx))
}

// Finish is InterceptResponse's work on the response next returned.
func (c Extension) Finish(ctx context.Context, resp *graphql.Response) *graphql.Response {
	if resp == nil || !graphql.HasOperationContext(ctx) {
		return resp
	}
	t, opCtx := c.Tally(ctx), graphql.GetOperationContext(ctx)
	a, ok := t.accountFor(opCtx)
	if !ok {
		return resp
	}
	if a.dryRun {
		if a.peek != nil {
			if len(resp.Errors) == 0 {
				resp.Data = json.RawMessage("null") // the plan instead of the answer
			}
			resp.Extensions = withExtension(resp.Extensions, PlanExtension, a.peek)
		}
		return resp
	}
	if !a.on || !c.Config.Enabled || opCtx.Operation == nil || opCtx.Operation.Operation != ast.Query ||
		resp.HasNext != nil && *resp.HasNext {
		return resp
	}
	r := t.receipt(a)
	if c.Config.OnReceipt != nil {
		c.Config.OnReceipt(ctx, r)
	}
	resp.Extensions = withExtension(resp.Extensions, CostExtension, r)
	return resp
}

func withExtension(m map[string]any, k string, v any) map[string]any {
	if m == nil {
		m = make(map[string]any, 1)
	}
	m[k] = v
	return m
}

// Admit records op's account (the loaders' admission.Operation).
func (t *Tally) Admit(op *graphql.OperationContext, a admission.Admitted) {
	acct := account{on: a.Receipts || a.DryRun, dryRun: a.DryRun, inspector: a.Receipts && a.Inspector, plan: a.Plan}
	if a.DryRun {
		acct.peek = &Plan{Estimated: a.Plan.Total(), Levels: a.Plan.Levels(), Complexity: a.Complexity,
			MaxComplexity: a.MaxComplexity, Admitted: a.Complexity <= a.MaxComplexity}
	}
	t.mu.Lock()
	t.acct, t.acctOp = acct, op // a later operation's replaces it
	t.mu.Unlock()
	if acct.on && acct.inspector {
		t.calls.Keep()
	}
}
