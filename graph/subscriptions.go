package graph

// This file holds the Subscription resolvers: live payment and checkout
// session status. The REST API has no events, so a subscription is a
// livepoll.Hub subscription whose fetch is one REST GET made with the
// subscriber's own credential pair: subscribers of one resource and one
// merchant share one poller, so a hundred screens on a payment cost one
// REST call per interval.
//
// How a subscription ends, as a client sees it:
//   - at a terminal state (FAILED, CANCELLED, REFUNDED; SUCCEEDED after the
//     watch of SUBSCRIPTION_WATCH_AFTER_SUCCESS): the last event carries
//     that state, then the stream completes;
//   - after a REST answer that polling again cannot change (NOT_FOUND,
//     UNAUTHENTICATED, FORBIDDEN, BAD_USER_INPUT): an error event with that
//     code, then complete;
//   - at SUBSCRIPTION_MAX_LIFETIME, or after SUBSCRIPTION_IDLE_TIMEOUT
//     without a change, or at shutdown: complete without a terminal state.
//     A client that still cares subscribes again and gets the current state
//     at once. No new error code is needed: a completion whose last state
//     is not terminal always means "subscribe again".
//
// A REST error that may pass (UPSTREAM_*, RATE_LIMITED) is an error event
// and the subscription goes on (a 429 pauses the poller for retryAfter).
//
// Each state event is a transition with an event id (livepoll numbers
// them per resource), written into the response's extensions.eventId.
// lastEventId (or, over SSE, the Last-Event-ID header) resumes after the
// one given; an id outside the kept transitions is EVENT_ID_EXPIRED.

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"paygraph/graph/customerdata"
	"paygraph/graph/errcode"
	"strconv"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"paygraph/graph/model"
	"paygraph/livepoll"
	"paygraph/restclient"
)

// Subscriptions is what the Subscription resolvers need: the process's
// hub and the REST client their polls use (not a request's loaders: a
// poll outlives the request that started it).
type Subscriptions struct {
	Hub  *livepoll.Hub
	REST REST
	// Charge, when not nil, charges a poll's REST calls to the merchant's
	// budget before it is made; an error (a *restclient.Error of kind
	// KindRateLimited, with its RetryAfter) refuses it.
	Charge func(ctx context.Context, merchant string, restCalls int) error
	// Accepted, when not nil, reports whether the caller's credential pair
	// is known to the REST API (restclient.Client.Accepted). A pair not
	// known is admitted provisionally (livepoll.Hub.SubscribeProvisional):
	// it counts against SUBSCRIPTION_MAX and the per-merchant cap only once
	// its first poll succeeded. Nil: every pair is counted at once.
	Accepted func(ctx context.Context) bool
	// PollTimeout, when positive, bounds one poll (REST_TIMEOUT): its
	// wait for a REST slot and its call together.
	PollTimeout time.Duration
}

// The kinds of livepoll keys: the only part of a key a metric carries.
const (
	KindPayment         = "payment"
	KindCheckoutSession = "checkout_session"
)

// errNoSubscriptions answers a subscription when the server has no hub.
var errNoSubscriptions = errors.New("subscriptions are not enabled on this server")

// LastEventIDHeader is graphql-sse's (and EventSource's) resume header.
const LastEventIDHeader = "Last-Event-ID"

// ResumeExpiredError is EVENT_ID_EXPIRED.
type ResumeExpiredError struct{}

func (*ResumeExpiredError) ErrorCode() string { return errcode.EventIDExpired }

func (*ResumeExpiredError) Error() string {
	return "lastEventId is outside the kept transitions (the resume window): read the resource again and subscribe without it"
}

// resumeAfter reads the event id to resume after: the lastEventId
// argument, or else the Last-Event-ID header of an SSE request; 0: none.
func resumeAfter(ctx context.Context, arg *string) (uint64, error) {
	v := ""
	if arg != nil {
		v = *arg
	} else if oc := graphql.GetOperationContext(ctx); oc != nil && oc.Headers != nil {
		v = oc.Headers.Get(LastEventIDHeader)
	}
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n == 0 {
		return 0, errcode.Inputf("lastEventId must be an extensions.eventId of an earlier event")
	}
	return n, nil
}

func (r *Resolver) paymentUpdated(ctx context.Context, id string, lastEventID *string) (<-chan *model.Payment, error) {
	if err := checkID("payment id", id, paymentIDPrefix); err != nil {
		return nil, err
	}
	after, err := resumeAfter(ctx, lastEventID)
	if err != nil {
		return nil, err
	}
	if err := r.allowPayment(ctx, id); err != nil {
		return nil, err
	}
	return subscribe[*model.Payment](ctx, r.Live, KindPayment, id, after, restclient.EndpointGetPayment, 1,
		func(ctx context.Context, rest REST) (livepoll.Snapshot, error) {
			p, err := rest.GetPayment(ctx, id)
			if err != nil {
				return livepoll.Snapshot{}, err
			}
			data, fp := encode(p)
			return livepoll.Snapshot{Value: model.NewPayment(p), Fingerprint: fp, Phase: phaseOf(string(p.Status)), Data: data}, nil
		})
}

func (r *Resolver) checkoutSessionUpdated(ctx context.Context, id string, lastEventID *string) (<-chan *model.CheckoutSession, error) {
	if err := checkID("checkout session id or reference", id, ""); err != nil {
		return nil, err
	}
	after, err := resumeAfter(ctx, lastEventID)
	if err != nil {
		return nil, err
	}
	if err := r.allow(ctx, true, func(s Scope) bool { return s.AllowsCheckoutSession(id) }, "checkout session ", id); err != nil {
		return nil, err
	}
	return subscribe[*model.CheckoutSession](ctx, r.Live, KindCheckoutSession, id, after, restclient.EndpointGetCheckoutSession, 2,
		func(ctx context.Context, rest REST) (livepoll.Snapshot, error) {
			s, err := rest.GetCheckoutSession(ctx, id)
			if err != nil {
				return livepoll.Snapshot{}, err
			}
			// The session's payment is polled with it (two REST calls per
			// interval, shared by every subscriber), so that the payment
			// field of each event is as fresh as the session. Without it
			// (a failed GET) the field falls back to the loader.
			v := model.NewCheckoutSession(s)
			if s.PaymentID != "" {
				v.LivePayment, _ = rest.GetPayment(ctx, s.PaymentID)
			}
			data, fp := encode(liveSession{Session: s, Payment: v.LivePayment})
			return livepoll.Snapshot{Value: v, Fingerprint: fp, Phase: phaseOf(s.PaymentStatus), Data: data}, nil
		})
}

// liveSession is a checkout session state as replicas share it (Data).
type liveSession struct {
	Session *restclient.CheckoutSession
	Payment *restclient.Payment
}

// DecodeLive rebuilds a state another replica observed from its
// Snapshot.Data (livepoll.Config.Decode).
func DecodeLive(kind string, data []byte) (any, error) {
	switch kind {
	case KindPayment:
		var p restclient.Payment
		if err := json.Unmarshal(data, &p); err != nil {
			return nil, err
		}
		return model.NewPayment(&p), nil
	case KindCheckoutSession:
		var ls liveSession
		if err := json.Unmarshal(data, &ls); err != nil || ls.Session == nil {
			return nil, cmp.Or(err, errors.New("no session"))
		}
		v := model.NewCheckoutSession(ls.Session)
		v.LivePayment = ls.Payment
		return v, nil
	}
	return nil, errors.New("unknown kind " + kind)
}

// phaseOf reads a payment status: SUCCEEDED may still become REFUNDED
// (watched for SUBSCRIPTION_WATCH_AFTER_SUCCESS), the other terminal ones
// will not change.
func phaseOf(status string) livepoll.Phase {
	switch restclient.PaymentStatus(status) {
	case restclient.StatusSucceeded:
		return livepoll.PhaseSettled
	case restclient.StatusFailed, restclient.StatusCancelled, restclient.StatusRefunded:
		return livepoll.PhaseFinal
	default:
		return livepoll.PhaseOpen
	}
}

// encode is the JSON of a REST record (what replicas share, DecodeLive)
// and its fingerprint: a hash of every field, so that any change a
// subscriber could see is a transition (a hash, not the JSON: it is
// compared on every poll).
func encode(v any) ([]byte, string) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, "" // cannot happen for the REST types; "" still works (every poll an event)
	}
	sum := sha256.Sum256(b)
	return b, hex.EncodeToString(sum[:])
}

// subscribe starts a hub subscription for the caller's merchant and
// relays its events to the channel gqlgen reads. Everything that can be
// refused is refused here, before any REST call: no credential pair, no
// hub, a bound reached.
func subscribe[T any](ctx context.Context, live Subscriptions, kind, id string, after uint64, ep restclient.Endpoint, calls int,
	fetch func(context.Context, REST) (livepoll.Snapshot, error)) (<-chan T, error) {
	if live.Hub == nil || live.REST == nil {
		return nil, errNoSubscriptions
	}
	creds, ok := restclient.CredentialsFrom(ctx)
	merchant, ok2 := restclient.MerchantOf(ctx)
	if !ok || !ok2 {
		// What the REST client answers without a call.
		return nil, &restclient.Error{Kind: restclient.KindUnauthorized, Endpoint: ep,
			Message: "missing x-api-key or x-api-secret header"}
	}
	// The poll's context is the poller's (livepoll: it ends when the last
	// subscriber leaves), with the credential pair of the subscriber who
	// started it: any later subscriber of the same key has the same pair.
	// It carries none of the request's budgets: no deadline, and not the
	// request's REST_MAX_CONCURRENCY slots (restclient.WithRequestLimit),
	// which belong to a request that may be long gone; the merchant's and
	// the process's REST slots still apply to every poll.
	//
	// A poll is charged to the merchant's REST-call budget (Charge) before
	// it is made: one poller per resource in the fleet, so once whatever
	// the number of subscribers and replicas. A refusal is a 429 to the
	// poller: it waits its retryAfter.
	//
	// A poll is bounded by PollTimeout (REST_TIMEOUT) from before its wait
	// for a REST slot: the poller's context has no deadline, and a poll of
	// a pair waiting behind a busy REST API must not wait forever.
	mkey := restclient.MerchantKeyFrom(ctx) // the poll names the pair as the request does
	subscribe := live.Hub.SubscribeAfter
	if live.Accepted != nil && !live.Accepted(ctx) {
		subscribe = live.Hub.SubscribeProvisional
	}
	sub, err := subscribe(ctx, livepoll.Key{Merchant: merchant, Kind: kind, ID: id},
		func(pctx context.Context) (livepoll.Snapshot, error) {
			if live.PollTimeout > 0 {
				var cancel context.CancelFunc
				pctx, cancel = context.WithTimeout(pctx, live.PollTimeout)
				defer cancel()
			}
			if live.Charge != nil {
				if err := live.Charge(pctx, merchant, calls); err != nil {
					return livepoll.Snapshot{}, pollError(err)
				}
			}
			snap, err := fetch(restclient.WithCredentials(restclient.WithMerchantKey(pctx, mkey), creds), live.REST)
			return snap, pollError(err)
		}, after)
	if err != nil {
		return nil, subscribeError(err)
	}
	out := make(chan T)
	evs := liveEventsFrom(ctx)
	level := customerDataOf(ctx)
	go func() {
		defer close(out)
		defer sub.Close()
		send := func(v T, ev liveEvent) bool {
			if evs == nil {
				if ev.err != nil {
					return true // no interceptor to carry it (cannot happen with NewServer)
				}
			} else {
				evs.push(ev)
			}
			select {
			case out <- v:
				return true
			case <-ctx.Done():
				return false
			}
		}
		for ev := range sub.Events() {
			var v T
			if ev.Err != nil {
				if !send(v, liveEvent{err: ev.Err}) {
					return
				}
				continue
			}
			// Each subscriber's own copy, at its customer-data level.
			v, ok := customerdata.MaskEvent(ev.Snapshot.Value, level).(T)
			if !ok {
				continue // cannot happen: Value is fetch's or DecodeLive's
			}
			if !send(v, liveEvent{id: ev.ID}) {
				return
			}
		}
		if errors.Is(sub.Err(), livepoll.ErrResumeExpired) {
			var zero T
			send(zero, liveEvent{err: &ResumeExpiredError{}})
		}
	}()
	return out, nil
}

// rateLimited lets livepoll read a 429's Retry-After.
type rateLimited struct{ err *restclient.Error }

func (e rateLimited) Error() string             { return e.err.Error() }
func (e rateLimited) RetryAfter() time.Duration { return e.err.RetryAfter }
func (e rateLimited) Unwrap() error             { return e.err }

// pollError tells livepoll what to do after a failed poll: wait for a
// 429's Retry-After, or stop when asking again cannot change the answer.
func pollError(err error) error {
	var re *restclient.Error
	if err == nil || !errors.As(err, &re) {
		return err
	}
	switch re.Kind {
	case restclient.KindRateLimited:
		return rateLimited{re}
	case restclient.KindNotFound, restclient.KindUnauthorized, restclient.KindForbidden,
		restclient.KindBadRequest, restclient.KindInvalidID:
		return livepoll.Permanent(err)
	}
	return err
}

// SubscriptionLimitError refuses a subscription over
// SUBSCRIPTION_MAX_PER_MERCHANT or SUBSCRIPTION_MAX (RATE_LIMITED: the
// caller may retry once one of its subscriptions has ended).
type SubscriptionLimitError struct{ err *livepoll.LimitError }

func (*SubscriptionLimitError) ErrorCode() string { return errcode.RateLimited }

func (e *SubscriptionLimitError) Error() string {
	if e.err.Scope == livepoll.ScopePending {
		return "too many live subscriptions wait for their first poll; retry in a few seconds"
	}
	return "too many live subscriptions for this " + e.err.Scope + "; end one before starting another"
}

func subscribeError(err error) error {
	if le, ok := errors.AsType[*livepoll.LimitError](err); ok {
		return &SubscriptionLimitError{le}
	}
	if errors.Is(err, livepoll.ErrResumeExpired) {
		return &ResumeExpiredError{}
	}
	return err
}

// liveEvents carries what each value of a subscription's channel is to
// its response: the event id of a state, or the error of an error event.
// gqlgen's subscription channel carries values only; an event that is an
// error is sent as a nil value, and the interceptor (liveEventsExtension)
// replaces the "null" error gqlgen then reports with this one. One entry
// is pushed before each value is sent and taken by that value's response,
// in order: the relay may push the next before the last is taken.
type liveEvents struct {
	mu sync.Mutex
	q  []liveEvent
}

type liveEvent struct {
	id  uint64
	err error
}

func (l *liveEvents) push(ev liveEvent) {
	l.mu.Lock()
	l.q = append(l.q, ev)
	l.mu.Unlock()
}

func (l *liveEvents) take() (liveEvent, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.q) == 0 {
		return liveEvent{}, false
	}
	ev := l.q[0]
	l.q = l.q[1:]
	return ev, true
}

type liveEventsKey struct{}

func liveEventsFrom(ctx context.Context) *liveEvents {
	if c := callerOf(ctx); c != nil {
		return c.live
	}
	l, _ := ctx.Value(liveEventsKey{}).(*liveEvents)
	return l
}

// liveEventsExtension gives each subscription operation its liveEvents
// and writes each event's id or error into its response.
type liveEventsExtension struct{}

var (
	_ graphql.OperationInterceptor = liveEventsExtension{}
	_ graphql.ResponseInterceptor  = liveEventsExtension{}
)

func (liveEventsExtension) ExtensionName() string                          { return "LiveEvents" }
func (liveEventsExtension) Validate(schema graphql.ExecutableSchema) error { return nil }

func (e liveEventsExtension) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	return next(e.prepare(ctx))
}

// prepare is InterceptOperation's context for next.
func (e liveEventsExtension) prepare(ctx context.Context) context.Context {
	ctx, _ = e.prepareOp(ctx, graphql.GetOperationContext(ctx))
	return ctx
}

// prepareOp is prepare for operation oc, and the live events it put in
// the context (nil: none, oc is not a subscription).
func (liveEventsExtension) prepareOp(ctx context.Context, oc *graphql.OperationContext) (context.Context, *liveEvents) {
	if oc.Operation == nil || oc.Operation.Operation != ast.Subscription {
		return ctx, nil
	}
	l := &liveEvents{}
	return context.WithValue(ctx, liveEventsKey{}, l), l
}

// EventIDExtension is the response extension that carries a state event's
// id (a decimal string: ids pass 2^53).
const EventIDExtension = "eventId"

func (e liveEventsExtension) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	return e.finish(ctx, next(ctx))
}

// finish is InterceptResponse's work on the response next returned.
func (liveEventsExtension) finish(ctx context.Context, resp *graphql.Response) *graphql.Response {
	l := liveEventsFrom(ctx)
	if resp == nil || l == nil {
		return resp
	}
	ev, ok := l.take()
	switch {
	case !ok:
	case ev.err != nil:
		resp.Data = nil
		resp.Errors = gqlerror.List{ErrorPresenter(ctx, ev.err)}
	case ev.id != 0 && len(resp.Errors) == 0:
		if resp.Extensions == nil {
			resp.Extensions = map[string]any{}
		}
		resp.Extensions[EventIDExtension] = strconv.FormatUint(ev.id, 10)
	}
	return resp
}
