// Package livepoll turns a read-only REST resource into a stream of its
// states: one poller per (merchant, kind, id), shared by every subscriber,
// so a resource costs one REST call per interval however many watch it.
// The caller hands in a fetch function (one REST GET) and says what a
// state is (Snapshot); each change is a numbered transition a subscriber
// can resume after (SubscribeAfter), and with a Store replicas share the
// pollers through a lease (RedisStore). docs/operations.md has the rest.
package livepoll
