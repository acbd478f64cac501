package admission

import "github.com/99designs/gqlgen/graphql"

// The operation's REST-call estimate, for the edge to charge: Limits
// records it on the operation once it passed every limit; the HTTP edge's
// operation extension (gqlhttp/charge.go), which runs after it and before
// any field, charges it to the merchant's rate limit and refuses the
// operation there. graph knows the estimate, never the budgets.

// RESTCallEstimate is an operation's estimate: the distinct REST calls it
// may make (costplan.go), and whether it is a dry run (charged nothing:
// the edge only peeks).
type RESTCallEstimate struct {
	Calls  int
	DryRun bool
}

// The operation's stats extensions that hold its estimate: an int and a
// bool, which do not allocate when boxed.
const (
	estimateExt = "paygraph.restCallEstimate"
	dryRunExt   = "paygraph.dryRun"
)

// setEstimate records op's estimate.
func setEstimate(op *graphql.OperationContext, e RESTCallEstimate) {
	op.Stats.SetExtension(estimateExt, e.Calls)
	if e.DryRun {
		op.Stats.SetExtension(dryRunExt, true)
	}
}

// OperationEstimate is op's REST-call estimate; ok false when it has none
// (refused by a limit, or not planned).
func OperationEstimate(op *graphql.OperationContext) (RESTCallEstimate, bool) {
	if op == nil {
		return RESTCallEstimate{}, false
	}
	calls, ok := op.Stats.GetExtension(estimateExt).(int)
	if !ok {
		return RESTCallEstimate{}, false
	}
	dry, _ := op.Stats.GetExtension(dryRunExt).(bool)
	return RESTCallEstimate{Calls: calls, DryRun: dry}, true
}

// rootCallsExt is the operation's stats extension that holds the REST
// calls its root fields alone will make (RootRESTCalls).
const rootCallsExt = "paygraph.rootRESTCalls"

// RootRESTCalls is how many REST calls op's root fields alone will make,
// counted before validation (0 for a dry run, which spends nothing); ok
// false when they were not counted. The edge refuses there a caller that
// may make no REST call (a pair the REST API refused, or not yet accepted
// and over the shared budgets), before validation, coercion and the plan.
func RootRESTCalls(op *graphql.OperationContext) (int, bool) {
	if op == nil {
		return 0, false
	}
	n, ok := op.Stats.GetExtension(rootCallsExt).(int)
	return n, ok
}
