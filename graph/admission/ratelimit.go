package admission

import "github.com/99designs/gqlgen/graphql"

// The operation's REST-call estimate, recorded on the operation for the
// edge (gqlhttp/charge.go) to charge before any field runs: admission
// knows the estimate, never the budgets.

// RESTCallEstimate is an operation's estimate, and whether it is a dry run
// (charged nothing: the edge only peeks).
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
// counted before validation (not for a dry run); ok false when not
// counted. The edge refuses there a caller that may make no REST call.
func RootRESTCalls(op *graphql.OperationContext) (int, bool) {
	if op == nil {
		return 0, false
	}
	n, ok := op.Stats.GetExtension(rootCallsExt).(int)
	return n, ok
}
