// Package livepoll turns a read-only REST resource into a stream of its
// states: one poller per (merchant, kind, id) shared by every subscriber, so a
// resource costs one REST call per interval however many watch it. Each change
// is a numbered transition a subscriber can resume after, and with a Store
// replicas share the pollers through a lease. See docs/operations.md.
package livepoll
