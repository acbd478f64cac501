// Package livepoll turns a read-only REST resource into a stream of its
// states: one poller per (merchant, kind, id) in the process, shared by
// every subscriber to it, so that a hundred screens waiting on one payment
// cost one REST call per interval, not a hundred. The REST API has no
// events, callbacks or notifications; polling is the only way to see a
// payment move, and this package makes its cost independent of how many
// watch.
//
// It imports nothing of the project: the caller hands in a fetch function
// (one REST GET, with the merchant's credentials captured in it), says what
// a state is (Snapshot: a value, a fingerprint to compare, a Phase), and
// maps fetch errors to its own codes.
//
// # A subscription
//
// Hub.Subscribe registers a subscriber and returns at once. Its first event
// is the current state: from the poller's latest transition when the key
// is already polled (no REST call), otherwise from the new poller's first
// fetch, made at once. Then it gets an event whenever the fingerprint
// changes, an error event when a fetch fails, and its channel closes when the
// subscription ends; Subscription.Err says why (nil: the resource reached a
// terminal state).
//
// Phases: PhaseOpen is polled; PhaseFinal (FAILED, CANCELLED, REFUNDED for a
// payment) is sent and then every subscription completes; PhaseSettled
// (SUCCEEDED, which may still become REFUNDED) is sent and watched for
// WatchAfterSettled more, then completes unless it changed. Why 10 minutes:
// a refund right after a payment is a correction made while the customer or
// the cashier is still looking (a wrong amount, a double payment); refunds
// made later are business processes nobody watches live, and a screen that
// wants them can subscribe again. Ten minutes of a settled payment cost at
// most 10 min / 8 s = 75 REST calls per watched payment (the backoff is at
// its ceiling by then), whatever the number of subscribers.
//
// # Polling
//
// The wait between two fetches starts at Interval. Each fetch that finds the
// resource unchanged (or fails) adds half an Interval, up to MaxInterval
// (4 × Interval by default: 2, 3, 4, ... 8 s), and a change resets it, so a
// payment that is moving is seen within an Interval while one that sits in
// PENDING costs a quarter of the calls. Every wait is jittered by ±10 %, so
// pollers started together (a burst of subscriptions) spread out instead of
// hitting the REST API in step; the average wait is unchanged. A fetch error
// carrying RetryAfter (a 429) pauses the poller at least that long. A fetch
// error wrapped with Permanent (not found, unauthenticated) is sent and ends
// every subscription of the key: polling again would cost calls for the
// same answer.
//
// The poller is one goroutine. It stops when its last subscriber leaves
// (its fetch is cancelled), when the resource completes, or at once on
// Hub.Close. A subscription itself owns no goroutine: its end on a context
// cancel is a context.AfterFunc, its lifetime a time.AfterFunc.
//
// # Transitions, not snapshots
//
// Every change a poll sees is a transition: an Event with an ID, one more
// than the previous transition of the same key (the first is the clock's
// Unix milliseconds, so ids of a history that was lost and started again
// are not confused with the old ones). Each subscriber gets each
// transition once, in order: the poller never waits for a subscriber, and
// a subscription buffers up to MaxKept states (and one error); one that
// leaves more unread ends with ErrTooSlow and resumes from its last id.
// A failed fetch is sent only to a subscriber with nothing unread (the
// state is what the screen needs; the error comes again with the next
// failed fetch), and has ID 0.
//
// # Resume
//
// The newest MaxKept transitions of a key are kept while it is polled and
// ResumeWindow after: in memory without a
// Store (at most MaxHistories keys without a poller; past that the one
// that would be forgotten first goes), in the Store with one.
// SubscribeAfter(after) sends the kept transitions after the id after,
// then the live ones. An id outside them (older than the kept ones, or
// never given: a restarted process, a lost Redis) is ErrResumeExpired:
// the client reads the resource again. A kept final state is sent without
// a fetch.
//
// # Across replicas: a Store
//
// With Config.Store, one replica at a time polls a key: the one holding
// its lease (taken when free and renewed every tick, a quarter of an
// Interval; it lives two ticks). Every replica with subscribers of the key
// runs a poller that reads the Store's new transitions each tick; the one
// holding the lease also fetches on the usual schedule and appends what
// changed. An append names the transition it follows and is refused when
// the Store holds a later one, so two replicas that both believe they
// poll (a lease that lapsed during a slow fetch) never record a
// transition twice. A replica that dies loses its lease within two ticks,
// and another replica's poller takes it and polls at once: within one
// Interval. A poller that stops gives its lease up. While the Store fails,
// each replica polls for itself, as without one.
//
// What a Store holds is untrusted (anything that reaches Redis can write
// it): an entry RedisStore did not write, or one that does not open under
// the replica's key, is skipped and counted, never a transition and never
// a reason to stop. The replica that polls deletes such entries when they
// stand in the way of its append (a later id than any transition), and a
// lease no replica took is taken over. A refused append whose later
// transition this replica cannot read is published as if recorded: the
// poll waits its usual interval.
//
// # Bounds, checked before any work
//
// Subscribe refuses, with a *LimitError (errors.Is ErrTooManySubscriptions),
// before creating a poller or calling fetch: more than MaxPerMerchant live
// subscriptions of one merchant key, or more than MaxSubscriptions in the
// process. A subscription ends after MaxLifetime whatever happens
// (ErrLifetime), and every subscription of a resource that has neither
// changed nor gained a subscriber for IdleTimeout ends (ErrIdle); a client
// still interested subscribes again and gets the current state at once. A
// subscriber joining a PhaseSettled resource gets what is left of its watch:
// the watch is about the resource, not about who looks at it.
//
// # Config (the composition root sets it; the defaults are here)
//
//	Interval           2s     first wait between two REST GETs of one resource; grows to 4x while it does not change (SUBSCRIPTION_POLL_INTERVAL)
//	WatchAfterSettled  10m    how long a SUCCEEDED resource is still polled for a REFUNDED (see above)
//	MaxLifetime        1h     longest life of one subscription (the client resubscribes)
//	IdleTimeout        15m    subscriptions of a resource unchanged this long end
//	MaxPerMerchant     100    live subscriptions per merchant (credential pair) per process (the gateway: SUBSCRIPTION_MAX/20)
//	MaxSubscriptions   2000   live subscriptions per process (SUBSCRIPTION_MAX)
//	ResumeWindow       10m    transitions are kept this long after the key was last polled
//
// Why: 2 s is how long a person waiting on a checkout page does not notice
// (wallet confirmations take several seconds themselves). One hour bounds
// how long a forgotten tab holds a slot; 15 minutes unchanged is past the
// few minutes a wallet or card session gives a customer, so a payment still
// PENDING then is abandoned. 100 per merchant is more screens on live
// payments than a shop has tills, and keeps one merchant (or one buggy app
// release) from taking the process's share. 2,000 per process: through the
// gateway (its transports' goroutines included) a subscription holds about
// 16 KB, so 2,000 is about 32 MB, a fifth of a pod's GOMEMLIMIT; in this
// package alone 10,000 idle subscriptions hold about 24 MB (2.4 KB each:
// 1.5 KB the buffer of MaxKept+1 events that lets each subscriber get
// every transition in order, most of the rest the context.AfterFunc
// registration in the caller's context; it was 0.94 KB with a one-event
// buffer that coalesced to the latest state; a poller about 4.4 KB more,
// mostly its goroutine's stack: BenchmarkIdleMemory, 2026-11-25), and the
// REST calls they cause are bounded by the pollers, at most one per
// distinct resource per Interval.
//
// # Keys
//
// Key.Merchant is an opaque string the caller derives (a hash of the
// credential pair, or a session token's merchant), never a secret: it is a
// map key, and two callers with different pairs never share a poller even
// for the same id. Key.Kind is one of a small fixed set ("payment",
// "checkout_session") and is the only part of a key a metric may carry.
// Each field is at most MaxKeyBytes: a key lives as long as its poller, and
// the id comes from a client.
package livepoll
