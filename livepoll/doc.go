// Package livepoll turns a read-only REST resource into a stream of its
// states: one poller per (merchant, kind, id) in the process, shared by
// every subscriber to it, so that a resource costs one REST call per
// interval however many watch it (the REST API has no events). It imports
// nothing of the project: the caller hands in a fetch function (one REST
// GET, the merchant's credentials captured in it) and says what a state is
// (Snapshot). The wait between fetches grows from Interval to MaxInterval
// while the resource does not change, jittered; each change is a
// transition with an id one more than the last, which a subscriber can
// resume after (SubscribeAfter) within ResumeWindow; with a Store,
// replicas share the pollers through a lease (RedisStore).
// docs/operations.md gives the defaults' reasons and the replicas' walk.
package livepoll
