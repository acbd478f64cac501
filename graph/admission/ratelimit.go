package admission

import "github.com/99designs/gqlgen/graphql"

// RESTCallEstimate is an operation's REST-call estimate, which the edge
// (gqlhttp/ratelimit.go) charges before any field runs, and whether it is a
// dry run (charged nothing).
type RESTCallEstimate struct {
	Calls  int
	DryRun bool
}

// The stats extensions of the estimate: an int and a bool box without allocating.
const (
	estimateExt = "paygraph.restCallEstimate"
	dryRunExt   = "paygraph.dryRun"
)

// OperationEstimate is op's REST-call estimate; ok false: none (refused by a limit, or not planned).
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

const rootCallsExt = "paygraph.rootRESTCalls"

// RootRESTCalls is the REST calls op's root fields alone will make,
// counted before validation (not for a dry run); ok false when not counted.
func RootRESTCalls(op *graphql.OperationContext) (int, bool) {
	if op == nil {
		return 0, false
	}
	n, ok := op.Stats.GetExtension(rootCallsExt).(int)
	return n, ok
}
